"""Session memory in a Redis server: every host that uses it shares it.

Every key starts ``PREFIX sessions:``. A content is one string, ``blob:VERSION``, with
the set of owners keeping it (``holders:VERSION``); ``lru`` and ``lru_named`` order the
contents by last use (those no holder names, and those a holder does; ``namers`` counts
the holders naming each), ``bytes`` counts them, ``clock`` gives the uses their order.
An owner's keys start
``LENGTH:OWNER:`` (unambiguous): ``kept`` and ``named`` (its versions by last use: those no
kept step names, and those some does), ``names`` (each step's, MessagePack by number) and
``refs`` (how many kept steps name each version), ``counts`` (a hash: its ``bytes`` kept,
the last step ``numbered`` and checkpoint ``marked``), ``steps`` and ``checkpoints``
(encoded, scored by number); ``active`` scores the owners by when a call
last named them, ``releasing`` holds those whose contents go for idleness; ``layout`` is
:data:`LAYOUT`, which every script checks first (and sets on keys without it), as does a
store object before its first call. Every call is one Lua script (atomic; reads too, for the
check), which names its keys itself: a single server or primary, not a Redis Cluster.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Final, TypeVar

import anyio

from ctxfs.core.errors import Unavailable
from ctxfs.core.observations.base import shown_url, stored_bytes, stored_owner
from ctxfs.core.redis_client import LoopClients, RedisError, unavailable
from ctxfs.core.sessions.base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_BYTES_PER_OWNER,
    DEFAULT_MAX_IDLE_DAYS,
    DEFAULT_MAX_STEPS,
    SWEEP_CONTENTS,
    Checkpoint,
    FileChange,
    SessionStore,
    Step,
    decoded,
    step_names,
)
from ctxfs.core.versions import Version

D = TypeVar("D")

__all__ = ["LAYOUT", "RedisSessions"]

_DAMAGED: Final = "Forget the owner's session (its steps are then gone)."
LAYOUT: Final = "1"
"""The layout of the keys (``layout``): a store whose keys another layout wrote is refused."""
_OTHER_LAYOUT: Final = "ctxfs: keys of another layout"
_CHECK_LAYOUT: Final = f"""
local P = ARGV[1]
local layout = redis.call('GET', P .. 'layout')
if not layout then
  redis.call('SET', P .. 'layout', '{LAYOUT}')
elseif layout ~= '{LAYOUT}' then
  return redis.error_reply('{_OTHER_LAYOUT} (' .. layout .. ')')
end
"""
_SHARED: Final = (
    _CHECK_LAYOUT
    + """
local function owned(who) return P .. #who .. ':' .. who .. ':' end
local function moved(from, to, v)
  local used = redis.call('ZSCORE', from, v)
  if used then
    redis.call('ZREM', from, v)
    redis.call('ZADD', to, used, v)
  end
  return used
end
local function namer(v, by)
  local count = redis.call('HINCRBY', P .. 'namers', v, by)
  if count <= 0 then redis.call('HDEL', P .. 'namers', v) end
  if (count > 0) ~= (count - by > 0) then
    local from, to = P .. 'lru', P .. 'lru_named'
    if by < 0 then from, to = to, from end
    moved(from, to, v)
  end
end
local function drop_blob(v)
  local blob = P .. 'blob:' .. v
  redis.call('DECRBY', P .. 'bytes', redis.call('STRLEN', blob))
  redis.call('DEL', blob, P .. 'holders:' .. v)
  redis.call('ZREM', P .. 'lru', v)
  redis.call('ZREM', P .. 'lru_named', v)
  redis.call('HDEL', P .. 'namers', v)
end
local function let_go(who, v)
  local o = owned(who)
  local named = redis.call('ZREM', o .. 'named', v)
  if redis.call('ZREM', o .. 'kept', v) + named == 1 then
    redis.call('HINCRBY', o .. 'counts', 'bytes', 0 - redis.call('STRLEN', P .. 'blob:' .. v))
  end
  if named == 1 then namer(v, -1) end
  redis.call('SREM', P .. 'holders:' .. v, who)
  if redis.call('SCARD', P .. 'holders:' .. v) == 0 then drop_blob(v) end
end
local function used_all(v)
  if redis.call('HEXISTS', P .. 'namers', v) == 1 then return P .. 'lru_named' end
  return P .. 'lru'
end
local function ranked(o, v)
  if redis.call('HEXISTS', o .. 'refs', v) == 1 then return o .. 'named' end
  return o .. 'kept'
end
local function keep(owner, v, data)
  local o, blob = owned(owner), P .. 'blob:' .. v
  local tick = redis.call('INCR', P .. 'clock')
  if redis.call('EXISTS', blob) == 0 then
    redis.call('SET', blob, data)
    redis.call('INCRBY', P .. 'bytes', #data)
  end
  redis.call('ZADD', used_all(v), tick, v)
  local order = ranked(o, v)
  if redis.call('SADD', P .. 'holders:' .. v, owner) == 1 then
    redis.call('HINCRBY', o .. 'counts', 'bytes', redis.call('STRLEN', blob))
    if order == o .. 'named' then namer(v, 1) end
  end
  redis.call('ZADD', order, tick, v)
end
local function bound(owner, most, most_owned)
  local o = owned(owner)
  while tonumber(redis.call('HGET', o .. 'counts', 'bytes') or '0') > most_owned do
    local oldest = redis.call('ZRANGE', o .. 'kept', 0, 0)[1]
      or redis.call('ZRANGE', o .. 'named', 0, 0)[1]
    if not oldest then redis.call('HSET', o .. 'counts', 'bytes', 0) break end
    let_go(owner, oldest)
  end
  while tonumber(redis.call('GET', P .. 'bytes') or '0') > most do
    local oldest = redis.call('ZRANGE', P .. 'lru', 0, 0)[1]
      or redis.call('ZRANGE', P .. 'lru_named', 0, 0)[1]
    if not oldest then redis.call('SET', P .. 'bytes', 0) break end
    for _, who in ipairs(redis.call('SMEMBERS', P .. 'holders:' .. oldest)) do
      let_go(who, oldest)
    end
    if redis.call('ZSCORE', P .. 'lru', oldest) or redis.call('ZSCORE', P .. 'lru_named', oldest)
    then
      drop_blob(oldest)  -- (held by none: a blob left behind)
    end
  end
end
local function name(o, versions, by)
  for _, v in ipairs(versions) do
    local count = redis.call('HINCRBY', o .. 'refs', v, by)
    if count <= 0 then redis.call('HDEL', o .. 'refs', v) end
    if (count > 0) ~= (count - by > 0) then
      local from, to = o .. 'kept', o .. 'named'
      if by < 0 then from, to = to, from end
      if moved(from, to, v) then namer(v, by) end
    end
  end
end
local function unname(o, number)
  local packed = redis.call('HGET', o .. 'names', number)
  if packed then
    local unpacked, names = pcall(cmsgpack.unpack, packed)
    if unpacked then name(o, names, -1) end  -- (a damaged entry names nothing)
    redis.call('HDEL', o .. 'names', number)
  end
end
"""
)
_NOTE_ACTIVE: Final = """
local owner, at = ARGV[2], ARGV[3]
redis.call('ZADD', P .. 'active', at, owner)
redis.call('SREM', P .. 'releasing', owner)
"""
_STEPS: Final = (
    "return redis.call('ZRANGEBYSCORE', owned(ARGV[2]) .. 'steps', '(' .. ARGV[3], '+inf')"
)
_CHECKPOINTS: Final = "return redis.call('ZRANGE', owned(ARGV[2]) .. 'checkpoints', 0, -1)"
_GIVEN_UP: Final = "return redis.call('HGET', owned(ARGV[2]) .. 'counts', 'given_up')"
_KEEP: Final = """
local o = owned(ARGV[2])
keep(ARGV[2], ARGV[3], ARGV[4])
bound(ARGV[2], tonumber(ARGV[5]), tonumber(ARGV[6]))
if redis.call('ZSCORE', ranked(o, ARGV[3]), ARGV[3]) then return 1 end
return 0
"""
_CONTENT: Final = """
local o, v = owned(ARGV[2]), ARGV[3]
local order = ranked(o, v)
if not redis.call('ZSCORE', order, v) then return false end
local data = redis.call('GET', P .. 'blob:' .. v)
if not data then return false end
local tick = redis.call('INCR', P .. 'clock')
redis.call('ZADD', order, tick, v)
redis.call('ZADD', used_all(v), tick, v)
return data
"""
_RECORD: Final = """
local o = owned(ARGV[2])
local n = redis.call('HINCRBY', o .. 'counts', 'numbered', 1)
local step = '{"number": ' .. n .. ', "at": ' .. ARGV[3] .. ', "changes": ' .. ARGV[4] .. '}'
redis.call('ZADD', o .. 'steps', n, step)
local names, last = {}, 8 + tonumber(ARGV[8])
for i = 9, last do names[#names + 1] = ARGV[i] end
if #names > 0 then
  redis.call('HSET', o .. 'names', n, cmsgpack.pack(names))
  name(o, names, 1)
end
for i = last + 1, #ARGV, 2 do keep(ARGV[2], ARGV[i], ARGV[i + 1]) end
local gone = redis.call('ZRANGE', o .. 'steps', 0, -tonumber(ARGV[5]) - 1, 'WITHSCORES')
if #gone > 0 then
  redis.call('HSET', o .. 'counts', 'given_up', gone[#gone])
  redis.call('ZREMRANGEBYRANK', o .. 'steps', 0, -tonumber(ARGV[5]) - 1)
  for i = 2, #gone, 2 do unname(o, gone[i]) end
end
bound(ARGV[2], tonumber(ARGV[6]), tonumber(ARGV[7]))
return n
"""
_DROP_STEPS: Final = """
local o = owned(ARGV[2])
for i = 3, #ARGV do
  if redis.call('ZREMRANGEBYSCORE', o .. 'steps', ARGV[i], ARGV[i]) > 0 then unname(o, ARGV[i]) end
end
return 1
"""
_MARK: Final = """
local o = owned(ARGV[2])
local n = redis.call('HINCRBY', o .. 'counts', 'marked', 1)
local last = redis.call('HGET', o .. 'counts', 'numbered') or '0'
local mark = '{"id": "cp' .. n .. '", "label": ' .. ARGV[3] .. ', "step": ' .. last
  .. ', "at": ' .. ARGV[4] .. '}'
redis.call('ZADD', o .. 'checkpoints', n, mark)
redis.call('ZREMRANGEBYRANK', o .. 'checkpoints', 0, -tonumber(ARGV[5]) - 1)
return {n, tonumber(last)}
"""
_FORGET: Final = """
local who = ARGV[2]
local o = owned(who)
for _, order in ipairs({'kept', 'named'}) do
  for _, v in ipairs(redis.call('ZRANGE', o .. order, 0, -1)) do let_go(who, v) end
end
redis.call('DEL', o .. 'counts', o .. 'steps', o .. 'names', o .. 'refs', o .. 'checkpoints')
redis.call('ZREM', P .. 'active', who)
redis.call('SREM', P .. 'releasing', who)
return 1
"""
_FORGET_IDLE: Final = """
local who = redis.call('SRANDMEMBER', P .. 'releasing')
if not who then
  who = redis.call('ZRANGEBYSCORE', P .. 'active', '-inf', '(' .. ARGV[3], 'LIMIT', 0, 1)[1]
  if not who then return 0 end
  local o = owned(who)
  local named = redis.call('ZRANGE', o .. 'named', 0, -1, 'WITHSCORES')
  for i = 1, #named, 2 do
    redis.call('ZADD', o .. 'kept', named[i + 1], named[i])
    namer(named[i], -1)
  end
  redis.call('DEL', o .. 'steps', o .. 'names', o .. 'refs', o .. 'named', o .. 'checkpoints')
  local numbered = redis.call('HGET', o .. 'counts', 'numbered')
  if numbered then redis.call('HSET', o .. 'counts', 'given_up', numbered) end
  redis.call('ZREM', P .. 'active', who)
  redis.call('SADD', P .. 'releasing', who)
end
local o = owned(who)
for _, v in ipairs(redis.call('ZRANGE', o .. 'kept', 0, tonumber(ARGV[4]) - 1)) do
  let_go(who, v)
end
if redis.call('ZCARD', o .. 'kept') == 0 then
  redis.call('SREM', P .. 'releasing', who)
  local counts = o .. 'counts'
  if redis.call('HEXISTS', counts, 'numbered') + redis.call('HEXISTS', counts, 'marked') == 0 then
    redis.call('DEL', counts)
  end
end
return 1
"""


class RedisSessions(SessionStore):
    """Contents and histories in a Redis server, bounded as :class:`SessionStore` says.

    Shared by every process and host that uses it; a content kept for several
    owners is stored once. Each change is one Lua script, atomic on the server:
    step numbers and checkpoint ids are never given twice. Point the URL at a
    primary, not a lagging replica; the server must not evict keys itself
    (``maxmemory-policy noeviction``): the bounds are the store's.

    Args:
        url: The server (``redis://HOST:PORT/DB``, ``rediss://`` for TLS, ``unix:///SOCKET``);
            redis-py's own query options apply.
        prefix: The start of every key written (one Redis database can serve several setups).
        max_bytes: Bytes of contents kept in all.
        max_bytes_per_owner: Bytes of contents kept for one owner.
        max_steps: Steps (and checkpoints) kept per owner.
        max_idle_days: Days without a call after which an owner's history is given up
            (an owner kept before ctxfs noted activity is not, until a call names it).
        timeout: Seconds to connect, and to wait for each answer, before ``Unavailable``.
        clock: Seconds since the epoch (:attr:`SessionStore.clock`); the hosts sharing the
            server should agree on it.

    Raises:
        ValueError: A bound is not a positive number.
        InvalidArgument: *url* is no usable Redis URL.

    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "ctxfs:",
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_bytes_per_owner: int = DEFAULT_MAX_BYTES_PER_OWNER,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_idle_days: int = DEFAULT_MAX_IDLE_DAYS,
        timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(
            max_bytes=max_bytes,
            max_bytes_per_owner=max_bytes_per_owner,
            max_steps=max_steps,
            max_idle_days=max_idle_days,
            clock=clock,
        )
        self.prefix = prefix.encode()
        self._url = url
        self._clients = LoopClients(
            url, timeout=timeout, shown=f"session store {self!r}", instead="sqlite:/// sessions"
        )
        self._layout_checked = False
        self._scripts = {
            name: self._clients.unbound.register_script(_SHARED + body)
            for name, body in (
                ("layout", "return 1"),
                ("note_active", _NOTE_ACTIVE),
                ("steps", _STEPS),
                ("checkpoints", _CHECKPOINTS),
                ("given_up", _GIVEN_UP),
                ("keep", _KEEP),
                ("content", _CONTENT),
                ("record", _RECORD),
                ("drop_steps", _DROP_STEPS),
                ("mark", _MARK),
                ("forget", _FORGET),
                ("forget_idle", _FORGET_IDLE),
            )
        }

    async def active(self, owner: str) -> None:
        """See :meth:`SessionStore.active`; first, once per store object, the keys' layout.

        Every script checks it too; checked here, keys of another layout fail the first call
        as themselves, before a note of activity or a look for idle owners fails (logged).

        Raises:
            Unavailable: Another layout wrote the keys under the prefix (then nothing is written).

        """
        if not self._layout_checked:
            await self._run("layout", b"")
            self._layout_checked = True
        await super().active(owner)

    async def keep(self, owner: str, version: Version, data: bytes) -> bool:
        """See :meth:`SessionStore.keep`: one script, the bounds kept in it."""
        await self.active(owner)
        if not self.fits(data):
            return False
        bounds = (self.max_bytes, self.max_bytes_per_owner)
        return bool(await self._script("keep", owner, stored_bytes(version), data, *bounds))

    async def content(self, owner: str, version: Version) -> bytes | None:
        """See :meth:`SessionStore.content`: one script (the use is recorded)."""
        await self.active(owner)
        data = await self._script("content", owner, stored_bytes(version))
        return None if data is None else bytes(data)

    async def record(
        self,
        owner: str,
        changes: Sequence[FileChange],
        *,
        at: float,
        contents: Sequence[tuple[Version, bytes]] = (),
    ) -> Step:
        """See :meth:`SessionStore.record`: one script keeps the contents, numbers the step."""
        await self.active(owner)
        changes = tuple(changes)
        encoded = json.dumps([change.encode() for change in changes])
        kept = [x for v, data in contents if self.fits(data) for x in (stored_bytes(v), data)]
        bounds = (self.max_bytes, self.max_bytes_per_owner)
        names = [stored_bytes(v) for v in step_names(owner, changes)]
        args = (json.dumps(at), encoded, self.max_steps, *bounds, len(names), *names, *kept)
        number = await self._script("record", owner, *args)
        return Step(number=int(number), changes=changes, at=at)

    async def steps(self, owner: str, *, after: int = 0) -> list[Step]:
        """See :meth:`SessionStore.steps`."""
        await self.active(owner)
        return await self._decoded(Step.decode, await self._script("steps", owner, after))

    async def given_up(self, owner: str) -> int:
        """See :meth:`SessionStore.given_up`."""
        await self.active(owner)
        given_up = await self._script("given_up", owner)
        return 0 if given_up is None else int(given_up)

    async def drop_steps(self, owner: str, numbers: Sequence[int]) -> None:
        """See :meth:`SessionStore.drop_steps`: one script."""
        await self.active(owner)
        if numbers:
            await self._script("drop_steps", owner, *sorted(set(numbers)))

    async def mark(self, owner: str, label: str | None, *, at: float) -> Checkpoint:
        """See :meth:`SessionStore.mark`: one script."""
        await self.active(owner)
        number, step = await self._script(
            "mark", owner, json.dumps(label), json.dumps(at), self.max_steps
        )
        return Checkpoint(id=Checkpoint.id_of(int(number)), label=label, step=int(step), at=at)

    async def checkpoints(self, owner: str) -> list[Checkpoint]:
        """See :meth:`SessionStore.checkpoints`."""
        await self.active(owner)
        return await self._decoded(Checkpoint.decode, await self._script("checkpoints", owner))

    async def forget_owner(self, owner: str) -> None:
        """See :meth:`SessionStore.forget_owner`: one script."""
        self._noted.pop(owner, None)
        await self._script("forget", owner)

    async def note_active(self, owner: str, at: float) -> None:
        """See :meth:`SessionStore.note_active`: one script."""
        await self._script("note_active", owner, repr(at))

    async def forget_idle(self, before: float) -> bool:
        """See :meth:`SessionStore.forget_idle`: one script."""
        return bool(await self._run("forget_idle", b"", repr(before), SWEEP_CONTENTS))

    async def aclose(self) -> None:
        """Close the connections."""
        await self._clients.aclose()

    def _owned(self, owner: str, what: bytes) -> bytes:
        """The key of *owner*'s *what* (the scripts' ``owned``)."""
        raw = stored_owner(owner)
        return b"%ssessions:%d:%s:%s" % (self.prefix, len(raw), raw, what)

    async def _script(self, name: str, owner: str, *args: object) -> Any:
        return await self._run(name, stored_owner(owner), *args)

    async def _run(self, name: str, owner: bytes, *args: object) -> Any:
        keyed: list[Any] = [self.prefix + b"sessions:", owner, *args]
        client = self._clients.current()  # (``InvalidArgument`` on a loop other than asyncio's)
        try:
            return await self._scripts[name](keys=[], args=keyed, client=client)
        except RedisError as error:
            raise self._unavailable(error) from error

    async def _decoded(self, decode: Callable[[str], D], texts: list[str]) -> list[D]:
        """*texts* decoded, in a worker thread (a history may be long)."""
        return await anyio.to_thread.run_sync(
            partial(decoded, decode, texts, store=repr(self), hint=_DAMAGED)
        )

    def _unavailable(self, error: RedisError) -> Unavailable:
        if _OTHER_LAYOUT not in str(error):
            return unavailable(error, f"session store {self!r}")
        keys = f"{self.prefix.decode()}sessions:*"
        found = str(error).rpartition(f"{_OTHER_LAYOUT} (")[2].partition(")")[0]
        return Unavailable(
            f"the session store {self!r} holds keys another version of ctxfs wrote ({keys}, "
            f"of layout {found!r}, not {LAYOUT!r})",
            retryable=False,
            hint=f"Give this ctxfs a prefix of its own (?prefix=...), or remove the keys {keys} "
            "(the sessions' contents and steps are then forgotten).",
            details={"layout": found, "expected_layout": LAYOUT},
        )

    def __repr__(self) -> str:
        return f"RedisSessions({shown_url(self._url)!r})"
