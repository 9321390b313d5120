"""A tool result in each provider's own shape: what a harness sends back to the model.

A :class:`~ctxfs.tools.ToolResult` holds the model's text and, for an image
``read`` returns, :attr:`~ctxfs.tools.ToolResult.media`. Each API carries
images back in its own way:

- Anthropic Messages: a ``tool_result`` content block (in the next user
  message) whose content is the text block, then one ``image`` block per image
  (:func:`anthropic_tool_result`);
- OpenAI Responses: a ``function_call_output`` item whose output is the text,
  or, with images, a list of ``input_text`` and ``input_image`` parts
  (:func:`openai_function_call_output`);
- OpenAI Chat Completions: a ``tool`` message carries text only, so the images
  follow in a ``user`` message (:func:`openai_chat_messages`).

The MCP server (``ImageContent``) and the pydantic-ai toolset (``BinaryContent``)
shape results themselves, from the same fields.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ctxfs.tools.results import ToolResult

__all__ = ["anthropic_tool_result", "openai_chat_messages", "openai_function_call_output"]


def anthropic_tool_result(result: ToolResult, tool_use_id: str) -> dict[str, Any]:
    """The ``tool_result`` block answering Anthropic's ``tool_use`` block *tool_use_id*."""
    images = [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": part.media_type, "data": part.base64_data},
        }
        for part in result.media
    ]
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": [{"type": "text", "text": result.text}, *images],
        "is_error": result.is_error,
    }


def openai_function_call_output(result: ToolResult, call_id: str) -> dict[str, Any]:
    """The Responses API's ``function_call_output`` item answering function call *call_id*.

    The output is the text alone when there is no image, as the API takes it most often.
    """
    output: str | list[dict[str, Any]] = result.text
    if result.media:
        output = [
            {"type": "input_text", "text": result.text},
            *({"type": "input_image", "image_url": part.data_url} for part in result.media),
        ]
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def openai_chat_messages(answers: Iterable[tuple[str, ToolResult]]) -> list[dict[str, Any]]:
    """The Chat Completions messages answering one assistant turn's tool calls.

    *answers* pairs each ``tool_call_id`` with its result. A ``tool`` message can
    carry only text, and the API wants the tool messages of a turn right after
    the assistant's message: so one ``tool`` message per call comes first, then,
    if any result holds images, one ``user`` message with them, each after a
    line naming the call it belongs to.
    """
    messages: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for call_id, result in answers:
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result.text})
        if result.media:
            images.append({"type": "text", "text": f"The image(s) of tool call {call_id}:"})
            images += (
                {"type": "image_url", "image_url": {"url": part.data_url}} for part in result.media
            )
    if images:
        messages.append({"role": "user", "content": images})
    return messages
