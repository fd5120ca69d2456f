#!/usr/bin/env python3
"""tests/data/tokenizer/make_corpus.py — writes corpus.inp, the tokenizer test strings.

The strings are listed here (some generated: runs of whitespace and digits of many lengths); the output has one
string per line in corpus.inp's escape format: bytes as they are, except backslash (\\\\), newline (\\n), carriage
return (\\r), tab (\\t), and \\xHH for every other control byte, DEL, every byte that is not part of valid UTF-8,
and the line-breaking code points U+0085, U+2028, U+2029 and U+FEFF (so that no editor splits or eats a line).
Deterministic: run it again and the file is identical.  Usage: python3 make_corpus.py > corpus.inp
"""
import sys

S = []  # list of bytes


def add(*xs):
    for x in xs:
        S.append(x.encode("utf-8") if isinstance(x, str) else bytes(x))


# --- English, contractions in several cases ---------------------------------------------------------------
add("Hello world", "Hello, world!", "hello world", " Hello world", "Hello world ", "  Hello  world  ",
    "The quick brown fox jumps over the lazy dog.", "THE QUICK BROWN FOX", "a", "A", "I", " a", "a ",
    "supercalifragilisticexpialidocious", "Antidisestablishmentarianism!",
    "I'm you're we've they'll he'd it's don't can't won't",
    "I'M YOU'RE WE'VE THEY'LL HE'D IT'S DON'T", "I'm You'Re We'vE They'lL He'D It'S",
    "'s 't 're 've 'm 'll 'd", "'S 'T 'RE 'VE 'M 'LL 'D", "'s't're've'm'll'd", "'x 'q '1 ''s",
    "rock'n'roll O'Neil's", "1990's 80's", "it’s curly ‘quotes’", "' s", "'", "''", "'''",
    "don't\n", "y'all", "ma'am", "'re'", "isn't it?", "He said: 'hi'.")

# --- other languages ---------------------------------------------------------------------------------------
add("你好，世界！", "我爱北京天安门。天安门上太阳升。", "中文字符没有空格分隔所以整段是一个预分词单元",
    "こんにちは世界", "日本語のテキスト：ひらがな、カタカナ、漢字。", "ｶﾀｶﾅ ﾊﾝｶｸ", "東京タワーは333メートルです。",
    "안녕하세요 세계", "한국어 텍스트입니다. 감사합니다!", "ᄀᄁᄂ ᅡᅢ (jamo)",
    "مرحبا بالعالم", "اللُّغَةُ الْعَرَبِيَّةُ", "السلام عليكم ورحمة الله ١٢٣٤٥", "\u200fمرحبا\u200f",
    "नमस्ते दुनिया", "हिन्दी भाषा में लिखा गया पाठ।", "क्षत्रिय ज्ञान श्री",
    "สวัสดีชาวโลก", "Привет, мир!", "ПРИВЕТ мир ёжик", "Γειά σου Κόσμε", "שלום עולם",
    "Tiếng Việt có dấu", "Tie\u0302\u0301ng Vie\u0323\u0302t (combining)", "İstanbul ılık ığdır",
    "Straße Maße Grüße", "Ærøskøbing", "Ñandú", "ǅemal ǈubljana", "ﬁne ﬂow (ligatures)",
    "Ελληνικά και English mixed", "ქართული", "Հայերեն", "አማርኛ", "ᏣᎳᎩ", "ꦗꦮ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙",
    "𐌰𐌱𐌲 gothic", "𠀀𠀁𠀂 ext-B", "𰀀 ext-G", "𱍐𱍑 ext-H", "𮯰𮯱 ext-I", "\U00011f04\U00011f05 kawi",
    "\U0001e030\U0001e031 cyrillic modifiers", "\u1c89\u1c8a unicode-16", "\u0378\u0379 unassigned",
    "\ue000\uf8ff private use", "\U0010ffff\U000f0000 planes 15-16")

# --- emoji -------------------------------------------------------------------------------------------------
add("😀😃😄😁", "I ❤️ you", "❤", "👍🏻👍🏼👍🏽👍🏾👍🏿", "👨‍👩‍👧‍👦 family", "👩🏽‍💻 coder",
    "🏳️‍🌈 flag", "🇯🇵🇺🇸🇩🇪", "1️⃣2️⃣#️⃣", "🧑‍🤝‍🧑", "🤷‍♂️🤷‍♀️", "emoji😀inside😀words",
    "🙂 🙃  🙂", "😀" * 20, "✨🎉🚀🔥💯", "☺︎ vs ☺️", "🏴󠁧󠁢󠁳󠁣󠁴󠁿 tag sequence")

# --- code ----------------------------------------------------------------------------------------------------
add("def hello(name):\n    print(f\"Hello, {name}!\")\n    return None\n",
    "for i in range(10):\n\tif i % 2 == 0:\n\t\tcontinue\n",
    "#include <stdio.h>\n\nint main(void) {\n    printf(\"%d\\n\", 42);\n    return 0;\n}\n",
    "const add = (a, b) => a + b; // ES6\nconsole.log(add(1, 2));",
    "fn main() {\n    let v: Vec<i32> = vec![1, 2, 3];\n    println!(\"{:?}\", v);\n}",
    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
    "{\"key\": [1, 2.5, true, null], \"nested\": {\"a\": \"b\"}}",
    "#!/bin/bash\nfor f in *.txt; do echo \"$f\"; done | sort -u > out.log 2>&1",
    "x = a->b; y = *p++; z = (i << 2) | (j >> 3) && !k || ~m ^ n;",
    "if (a != b && c <= d || e >= f) { return a === b ? c : d; }",
    "\\begin{equation} E = mc^2 \\end{equation}",
    "all:\n\t$(CC) -O2 -o $@ $^\n",
    "    indented four\n        indented eight\n",
    "public static void main(String[] args) { System.out.println(\"x\"); }",
    "^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$",
    "a_b_c __init__ CamelCaseName snake_case_name SCREAMING_CASE",
    "i++; --j; k += 1; l -= 2; m *= 3; n /= 4;",
    "```python\nprint('hi')\n```",
    "    \n    \n\tx",
    "// comment\n/* block */\n# hash\n-- sql\n")

# --- whitespace runs -------------------------------------------------------------------------------------------
for n in (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100):
    add(" " * n)
for n in (2, 5, 16):
    add("a" + " " * n + "b")
for n in (1, 2, 3, 4, 8, 9):
    add("\t" * n)
for n in (1, 2, 3, 4, 5, 8, 10, 16):
    add("\n" * n)
add("\r\n", "\r\n\r\n", "a\r\nb", "\r", "\r\r\n\n", "line1\nline2\n\nline4", "a\n\nb", "\n\n\n\nfoo",
    "foo\n\n\n\n", " \n \n ", "  \n  ", "\t \n \t", "x \t y", "word   \nnext", "word\n   next",
    "a \u00a0b", "a\u00a0\u00a0\u00a0b", "\u3000全角\u3000スペース", "line\u2028sep\u2029para", "next\u0085line",
    "\x0b\x0c vertical tab and form feed", "\x1c\x1d\x1e\x1f info separators", "trailing spaces   ",
    "   leading spaces", " \t\n\r\x0b\x0c", "\u2000\u2001\u2002\u2003\u2009\u200a", "\u200b zero width \u200b",
    "a\u202fb\u205fc\u1680d", "  \n\n  \n", "\n \n", "x\n\n\ny \n z")

# --- digits ------------------------------------------------------------------------------------------------------
digits = "12345678901234567890123"
for n in range(1, 24):
    add(digits[:n])
add("0", "00", "007", "3.14159", "-273.15", "1,000,000", "1 000 000", "+1-555-0100", "0x1F 0b1010 0o777",
    "1e10 6.02e23", "abc123def", "123abc", "a1b2c3", "v1.2.3", "2024-01-31T12:34:56Z", "99.9%", "$100",
    "٠١٢٣٤٥٦٧٨٩", "१२३४५", "１２３４５", "²³¹ superscripts", "½ ¾ ⅓", "Ⅻ Ⅳ ⅷ", "①②③", "１２ab３４",
    "1234567 12345 123", "١٢٣abc")

# --- punctuation, symbols ---------------------------------------------------------------------------------------
add("!!!", "...", "?!", "Wait... what?!", "—", "– - —", "«guillemets»", "“double” „low“", "(parens)",
    "[brackets]", "{braces}", "@#$%^&*", "~`|\\", "<>", "<=>", "->", "=>", "::", ";;", "!@#$%^&*()_+-=[]{}|;':\",./<>?",
    "¡Hola! ¿Qué?", "§¶†‡•", "€£¥₹₿", "™®©", "°C ±5 ×2 ÷3", "∑∫∂√∞≈≠≤≥", "←↑→↓↔", "■□▲△●○",
    "、。「」『』", "，。！？：；", "…", "‽", "ʼapostrophe modifier", "\\\\\\", "/* */", "#$", "==", "===",
    "____", "----", "****", "####", "|-|-|", ". . .", ",,,")

# --- URLs, e-mail, paths ---------------------------------------------------------------------------------------
add("https://example.com/path/to/page?query=1&other=two#fragment", "http://localhost:11434/api/generate",
    "user.name+tag@example.co.uk", "C:\\Users\\name\\Documents\\file.txt", "/usr/local/bin/orun --help",
    "ftp://files.example.org/pub/README", "www.example.com", "mailto:a@b.c",
    "https://zh.wikipedia.org/wiki/中文", "file:///tmp/x%20y.txt")

# --- mixed scripts -----------------------------------------------------------------------------------------------
add("Hello世界", "日本語とEnglishの混在テキスト", "Привет, world! 你好", "123abc中文456", "mixed العربية and English",
    "हिन्दी English 中文 日本語 한국어", "café naïve résumé", "ABCdefGHI", "x²+y²=z²", "α+β=γ", "e\u0301 vs é")

# --- special tokens written in text ------------------------------------------------------------------------------
add("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are helpful.<|im_end|>", "text<|endoftext|>more text", " <|im_end|> ",
    "<|endoftext|><|endoftext|>", "<|im_start|><|im_end|>", "<|im_star", "<|IM_START|>", "<|<|im_end|>|>",
    "<<|im_start|>>", "</s>", "<s>", "<unk>", "<s>hello</s>", "<tool_call>{\"name\": \"f\"}</tool_call>",
    "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>", "<|repo_name|>orun<|file_sep|>main.c", "<reponame>x",
    "<repo_name>", "<jupyter_code>print(1)<jupyter_output>", "<filename>a.py<gh_stars>10", "<empty_output>",
    "<|user|>hi<|assistant|>", "<|object_ref_start|>", "[PAD151665]", "<|endoftext|>\n\n<|endoftext|>")

# --- invalid UTF-8 and odd bytes --------------------------------------------------------------------------------
add(b"\x80", b"\xff", b"\xfe\xff", b"abc\x80def", b"\xc3", b"\xc3(", b"\xe4\xbd", b"x\xe4\xbd", b"\xe4\xbdx",
    b"\xf0\x9f\x98", b"\xf0\x9f\x98x", b"\xc0\x80", b"a\xc0\x80b", b"\xc1\xbf", b"\xe0\x80\x80", b"\xed\xa0\x80",
    b"a\xed\xbf\xbfb", b"\xf8\x88\x80\x80\x80", b"\xbf\xbf\xbf", b"\x00", b"a\x00b", b"\x01\x02\x03\x1b[0m",
    b"\x7f", "ok \ufffd replacement".encode(), b"\xe4\xbd\xa0\xe5\xa5", b"\xc2\x85", b"\xef\xbb\xbfBOM",
    b"caf\xe9 latin-1", b"\xe2\x82", b" \x80 ", b"\xff\xfe\x00h\x00i")

# --- byte-level BPE alphabet characters and SentencePiece markers written literally ---------------------------------
add("Ġ", "ĠĠĠ", "Ċ", "ĉ", "Ā", "ĠHello", "▁", "▁▁hello", "hello▁world", "<0x0A>", "<0xFF>")

# --- assorted ---------------------------------------------------------------------------------------------------------
add("", " ", "a" * 100, "ab" * 50, "the the the the the the", "aaaa bbbb aaaa bbbb", "🙂" * 3 + "a" * 3,
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.",
    "Dear Sir/Madam,\n\nI am writing to ...\n\nKind regards,\nA. Person\n",
    "Q: What is 2+2?\nA: 4.", "TL;DR: yes.", "e.g. i.e. etc. vs. Mr. Dr.", "NASA's JPL's",
    "JSON: {\"a\":1}\nYAML:\n  a: 1\n", "- item 1\n- item 2\n  - nested", "1. first\n2. second",
    "| col | col |\n|-----|-----|\n| 1   | 2   |", "> quoted\n>> nested", "**bold** _italic_ `code`")

ESCAPE_CPS = {0x85, 0x2028, 0x2029, 0xFEFF}


def escape(b):
    out = []
    i = 0
    while i < len(b):
        c = b[i]
        # find the length of a valid UTF-8 sequence starting here (strict decoding)
        n = 1 if c < 0x80 else 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF else 4 if 0xF0 <= c <= 0xF4 else 0
        if c < 0x80:
            if c == 0x5C:
                out.append("\\\\")
            elif c == 0x0A:
                out.append("\\n")
            elif c == 0x0D:
                out.append("\\r")
            elif c == 0x09:
                out.append("\\t")
            elif c < 0x20 or c == 0x7F:
                out.append("\\x%02x" % c)
            else:
                out.append(chr(c))
            i += 1
            continue
        ch = None
        if n:
            try:
                ch = b[i:i + n].decode("utf-8")
            except UnicodeDecodeError:
                ch = None
        if ch is None or ord(ch) in ESCAPE_CPS:
            run = b[i:i + n] if ch is not None else b[i:i + 1]
            out.extend("\\x%02x" % x for x in run)
            i += len(run)
        else:
            out.append(ch)
            i += n
    return "".join(out)


def main():
    seen = set()
    lines = []
    for s in S:
        if s in seen:
            continue
        seen.add(s)
        lines.append(escape(s))
    sys.stdout.buffer.write(("\n".join(lines) + "\n").encode("utf-8"))


if __name__ == "__main__":
    main()
