"""Realistic paragraphs in many languages, and the legacy code pages each is written in.

Each paragraph is ordinary prose of a few hundred characters, the size of a
README section or a comment block: the evidence a detector has in real files.
"""

from __future__ import annotations

from typing import Final

PARAGRAPHS: Final[dict[str, str]] = {
    "russian": (
        "Привет, мир! Эта программа читает файлы настроек и проверяет, что все значения "
        "заданы правильно. Если параметр отсутствует, используется значение по умолчанию, "
        "а в журнал записывается предупреждение. Перед запуском убедитесь, что у вас есть "
        "права на запись в каталог с данными, иначе сохранить результаты не получится."
    ),
    "ukrainian": (
        "Цей модуль відповідає за збереження звітів. Кожен звіт містить дату, ім'я "
        "користувача та перелік змін, які були внесені протягом дня. Якщо з'єднання з "
        "базою даних втрачено, програма повторює спробу через кілька секунд і повідомляє "
        "про помилку лише після третьої невдалої спроби."
    ),
    "bulgarian": (
        "Тази функция изчислява общата сума на поръчката, като включва данъците и "
        "отстъпките. Ако клиентът има карта за лоялност, отстъпката се прилага "
        "автоматично. Резултатът се закръглява до втория знак след десетичната запетая и "
        "се записва в базата данни заедно с номера на поръчката."
    ),
    "serbian": (
        "Овај програм служи за обраду података о становништву. Сваки запис садржи име, "
        "презиме, датум рођења и место становања. Када се учита нова датотека, програм "
        "проверава да ли су сва поља попуњена и пријављује грешке које пронађе у посебном "
        "извештају."
    ),
    "greek": (
        "Αυτή η εφαρμογή διαβάζει τα αρχεία ρυθμίσεων και ελέγχει ότι όλες οι τιμές "
        "είναι σωστές. Αν κάποια παράμετρος λείπει, χρησιμοποιείται η προεπιλεγμένη τιμή "
        "και καταγράφεται μια προειδοποίηση. Πριν από την εκτέλεση, βεβαιωθείτε ότι έχετε "
        "δικαίωμα εγγραφής στον φάκελο δεδομένων."
    ),
    "hebrew": (
        "התוכנית הזאת קוראת את קובצי ההגדרות ובודקת שכל הערכים תקינים. אם פרמטר חסר, "
        "נעשה שימוש בערך ברירת המחדל ונרשמת אזהרה ביומן. לפני ההפעלה יש לוודא שיש לכם "
        "הרשאת כתיבה לתיקיית הנתונים, אחרת לא ניתן יהיה לשמור את התוצאות."
    ),
    "arabic": (
        "يقوم هذا البرنامج بقراءة ملفات الإعدادات والتحقق من أن جميع القيم صحيحة. إذا "
        "كان أحد المعاملات مفقودا، يتم استخدام القيمة الافتراضية وتسجيل تحذير في السجل. "
        "قبل التشغيل، تأكد من أن لديك صلاحية الكتابة في مجلد البيانات، وإلا فلن يتم حفظ "
        "النتائج."
    ),
    "thai": (
        "โปรแกรมนี้อ่านไฟล์การตั้งค่าและตรวจสอบว่าค่าทั้งหมดถูกต้อง หากไม่มีพารามิเตอร์ใด "
        "ระบบจะใช้ค่าเริ่มต้นและบันทึกคำเตือนไว้ในบันทึก ก่อนเริ่มใช้งาน "
        "โปรดตรวจสอบว่าคุณมีสิทธิ์เขียนข้อมูลลงในโฟลเดอร์ มิฉะนั้นจะไม่สามารถบันทึกผลลัพธ์ได้"
    ),
    "turkish": (
        "Bu program ayar dosyalarını okur ve tüm değerlerin doğru olup olmadığını kontrol "
        "eder. Bir parametre eksikse varsayılan değer kullanılır ve günlüğe bir uyarı "
        "yazılır. Çalıştırmadan önce veri klasörüne yazma izniniz olduğundan emin olun; "
        "aksi hâlde sonuçlar kaydedilemez. İstanbul şubesi için ayrı bir yapılandırma gerekir."
    ),
    "polish": (
        "Ten program odczytuje pliki konfiguracyjne i sprawdza, czy wszystkie wartości są "
        "poprawne. Jeśli brakuje jakiegoś parametru, używana jest wartość domyślna, a w "
        "dzienniku zapisywane jest ostrzeżenie. Przed uruchomieniem upewnij się, że masz "
        "uprawnienia do zapisu w katalogu z danymi, ponieważ inaczej wyniki nie zostaną zapisane."
    ),
    "czech": (
        "Tento program načítá konfigurační soubory a kontroluje, zda jsou všechny hodnoty "
        "správné. Pokud některý parametr chybí, použije se výchozí hodnota a do protokolu "
        "se zapíše varování. Před spuštěním se ujistěte, že máte oprávnění k zápisu do "
        "adresáře s daty, jinak nebude možné výsledky uložit."
    ),
    "hungarian": (
        "Ez a program beolvassa a beállítási fájlokat, és ellenőrzi, hogy minden érték "
        "helyes-e. Ha egy paraméter hiányzik, az alapértelmezett érték lesz használva, és "
        "a naplóba figyelmeztetés kerül. Indítás előtt győződjön meg arról, hogy van írási "
        "joga az adatkönyvtárhoz, különben az eredmények nem menthetők el."
    ),
    "romanian": (
        "Acest program citeşte fişierele de configurare şi verifică dacă toate valorile "
        "sunt corecte. Dacă lipseşte un parametru, se foloseşte valoarea implicită şi se "
        "scrie un avertisment în jurnal. Înainte de pornire, asiguraţi-vă că aveţi drept "
        "de scriere în directorul de date, altfel rezultatele nu vor putea fi salvate."
    ),
    "french": (
        "Ce programme lit les fichiers de configuration et vérifie que toutes les valeurs "
        "sont correctes. Si un paramètre est absent, la valeur par défaut est utilisée et "
        "un avertissement est écrit dans le journal. Avant le lancement, assurez-vous "
        "d'avoir le droit d'écrire dans le dossier des données ; sinon, les résultats ne "
        "pourront pas être enregistrés. Le cœur du système reste inchangé."
    ),
    "german": (
        "Dieses Programm liest die Konfigurationsdateien und prüft, ob alle Werte korrekt "
        "sind. Fehlt ein Parameter, wird der Standardwert verwendet und eine Warnung ins "
        "Protokoll geschrieben. Stellen Sie vor dem Start sicher, dass Sie Schreibrechte "
        "für das Datenverzeichnis besitzen, sonst können die Ergebnisse nicht gespeichert "
        "werden. Größere Änderungen müssen vorher geprüft werden."
    ),
    "spanish": (
        "Este programa lee los archivos de configuración y comprueba que todos los valores "
        "sean correctos. Si falta algún parámetro, se utiliza el valor predeterminado y se "
        "escribe una advertencia en el registro. Antes de iniciarlo, asegúrese de tener "
        "permiso de escritura en la carpeta de datos; de lo contrario, no se podrán guardar "
        "los resultados. ¿Preguntas? Escriba al equipo de España."
    ),
    "portuguese": (
        "Este programa lê os arquivos de configuração e verifica se todos os valores estão "
        "corretos. Se algum parâmetro estiver ausente, o valor padrão é usado e um aviso é "
        "gravado no registro. Antes de iniciar, certifique-se de que você tem permissão de "
        "gravação na pasta de dados; caso contrário, não será possível salvar os resultados."
    ),
    "swedish": (
        "Det här programmet läser konfigurationsfilerna och kontrollerar att alla värden är "
        "korrekta. Om en parameter saknas används standardvärdet och en varning skrivs till "
        "loggen. Innan du startar, se till att du har skrivbehörighet i datakatalogen, "
        "annars går det inte att spara resultaten. Kontakta gärna supporten vid frågor."
    ),
    "lithuanian": (
        "Ši programa nuskaito konfigūracijos failus ir patikrina, ar visos reikšmės yra "
        "teisingos. Jei trūksta kurio nors parametro, naudojama numatytoji reikšmė, o į "
        "žurnalą įrašomas įspėjimas. Prieš paleisdami įsitikinkite, kad turite teisę rašyti "
        "į duomenų katalogą, kitaip rezultatų nepavyks išsaugoti."
    ),
    "latvian": (
        "Šī programma nolasa konfigurācijas failus un pārbauda, vai visas vērtības ir "
        "pareizas. Ja kāds parametrs trūkst, tiek izmantota noklusējuma vērtība un žurnālā "
        "tiek ierakstīts brīdinājums. Pirms palaišanas pārliecinieties, ka jums ir rakstīšanas "
        "tiesības datu mapē, citādi rezultātus nevarēs saglabāt."
    ),
    "japanese": (
        "このプログラムは設定ファイルを読み込み、すべての値が正しいかどうかを確認します。"
        "パラメータが見つからない場合は既定値が使われ、ログに警告が書き込まれます。"
        "実行する前に、データフォルダーへの書き込み権限があることを確認してください。"
        "権限がないと、結果を保存することができません。"
    ),
    "chinese_simplified": (
        "这个程序读取配置文件，并检查所有的值是否正确。如果缺少某个参数，就使用默认值，"
        "并在日志中写入一条警告。运行之前，请确认你对数据目录有写入权限，否则无法保存结果。"
        "如果有任何问题，请联系我们的技术支持团队。"
    ),
    "chinese_traditional": (
        "這個程式讀取設定檔，並檢查所有的值是否正確。如果缺少某個參數，就使用預設值，"
        "並在日誌中寫入一條警告。執行之前，請確認你對資料目錄有寫入權限，否則無法儲存結果。"
        "如果有任何問題，請聯絡我們的技術支援團隊。"
    ),
    "korean": (
        "이 프로그램은 설정 파일을 읽고 모든 값이 올바른지 확인합니다. 매개변수가 없으면 "
        "기본값이 사용되고 로그에 경고가 기록됩니다. 실행하기 전에 데이터 폴더에 쓰기 "
        "권한이 있는지 확인하십시오. 권한이 없으면 결과를 저장할 수 없습니다."
    ),
}
"""Language -> a paragraph of it."""

CODE_PAGES: Final[dict[str, tuple[str, ...]]] = {
    "russian": ("cp1251", "koi8-r", "cp866", "iso8859-5"),
    "ukrainian": ("cp1251", "koi8-u"),
    "bulgarian": ("cp1251", "cp866"),
    "serbian": ("cp1251", "iso8859-5"),
    "greek": ("cp1253", "iso8859-7"),
    "hebrew": ("cp1255", "iso8859-8"),
    "arabic": ("cp1256",),
    "thai": ("cp874", "tis-620"),
    "turkish": ("cp1254", "iso8859-9"),
    "polish": ("cp1250", "iso8859-2"),
    "czech": ("cp1250", "iso8859-2"),
    "hungarian": ("cp1250", "iso8859-2"),
    "romanian": ("cp1250", "iso8859-2"),
    "french": ("cp1252", "iso8859-15"),
    "german": ("cp1252", "iso8859-1", "iso8859-15"),
    "spanish": ("cp1252", "iso8859-1"),
    "portuguese": ("cp1252", "iso8859-1"),
    "swedish": ("cp1252", "iso8859-1"),
    "lithuanian": ("cp1257",),
    "latvian": ("cp1257",),
    "japanese": ("shift_jis", "cp932", "euc_jp"),
    "chinese_simplified": ("gbk", "gb18030"),
    "chinese_traditional": ("big5",),
    "korean": ("euc_kr", "cp949"),
}
"""Language -> the legacy code pages its files are found in."""

WIDE_ENCODINGS: Final = ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
"""Encodings told by their NUL bytes, without a BOM."""
