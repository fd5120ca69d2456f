"""Interactive `orun run MODEL` in a real terminal (a pty driven by pexpect) against a live `orun serve` with the
small real model: prompts and answers, line editing with the arrow keys and backspace, history (up arrow and
~/.ollama/history), Ollama's slash commands and their texts, \"\"\" multi-line input, bracketed paste, Ctrl-C
during an answer (back to >>> with the server's slot free) and at an empty prompt, Ctrl-D, and word wrap at the
terminal width, checked on the screen as a terminal would draw it.
"""
import os
import re
import time

import pexpect
import pytest
import requests

from test_server_common import Server, create_qwen

PROMPT = ">>> "
TIMEOUT = 240  # seconds for one answer on a busy 2-core machine
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def srv(orun_bin, tmp_path_factory):
    import ollama

    s = Server(orun_bin, tmp_path_factory.mktemp("interactive"))
    try:
        create_qwen(ollama.Client(host=s.base))
        yield s
    finally:
        s.stop()


@pytest.fixture
def run(orun_bin, srv, tmp_path):
    """Starts `orun run qwen2 [flags]` on a pty of the given size; HOME is a temporary folder."""
    children = []

    def start(*flags, cols=100, rows=40):
        env = dict(os.environ, OLLAMA_HOST=f"127.0.0.1:{srv.port}", HOME=str(tmp_path), TERM="xterm-256color")
        env.pop("OLLAMA_NOHISTORY", None)
        child = pexpect.spawn(orun_bin, ["run", "qwen2", *flags], env=env, dimensions=(rows, cols),
                              encoding="utf-8", timeout=TIMEOUT)
        children.append(child)
        child.expect_exact(PROMPT)
        child.expect_exact("Send a message (/? for help)")
        return child

    start.home = tmp_path
    yield start
    for c in children:
        if c.isalive():
            c.terminate(force=True)


def command(child, line, expect):
    """Types a line, waits for the text it prints and the next prompt; returns what came between them
    (escape sequences removed)."""
    child.send(line + "\r")
    child.expect_exact(expect)
    child.expect_exact(PROMPT)
    return ANSI.sub("", child.before)


def screen(raw, cols):
    """The lines a terminal `cols` wide without auto-wrap shows for raw output: printable text, CR, LF,
    ESC[nD (cursor left), ESC[nG (column n), ESC[K (clear to the end of the line) and ESC[2K (clear the
    line); other escape sequences are ignored."""
    lines, row, col = [[]], 0, 0
    i = 0
    while i < len(raw):
        m = ANSI.match(raw, i)
        if m:
            seq = m.group(0)
            if seq.endswith("D"):
                col = max(0, col - int(seq[2:-1] or 1))
            elif seq.endswith("G"):
                col = int(seq[2:-1] or 1) - 1
            elif seq == "\x1b[K":
                del lines[row][col:]
            elif seq == "\x1b[2K":
                lines[row] = []
            i = m.end()
            continue
        ch = raw[i]
        i += 1
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row += 1
            if row == len(lines):
                lines.append([])
        elif ch >= " ":
            line = lines[row]
            line.extend(" " * (col - len(line)))
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
    return ["".join(l).rstrip() for l in lines]


def test_prompt_answer_help_and_commands(run):
    child = run()
    command(child, "/set parameter num_predict 16", "Set parameter 'num_predict' to '16'")
    child.send("Say hello.\r")
    child.expect_exact(PROMPT)
    answer = ANSI.sub("", child.before).replace("Say hello.", "").strip()
    assert answer, "no answer"
    child.send("/?\r")
    child.expect_exact("Use \"\"\" to begin a multi-line message.")
    assert "/set            Set session variables" in child.before
    assert "/? shortcuts    Help for keyboard shortcuts" in child.before
    child.expect_exact(PROMPT)
    out = command(child, "/? shortcuts", "Available keyboard shortcuts:")
    assert "Ctrl + c            Stop the model from responding" in out
    assert "Ctrl + d            Exit orun (/bye)" in out
    command(child, "/? set", "/set nothink           Disable thinking")
    command(child, "/show", "/show template     Show prompt template")
    command(child, "/foo bar", "Unknown command '/foo'. Type /? for help")
    command(child, "/set foo", "Unknown command '/set foo'. Type /? for help")
    command(child, "/set format yaml", "Invalid or missing format. For 'json' mode use '/set format json'")
    command(child, "/set format json", "Set format to 'json' mode.")
    command(child, "/set noformat", "Disabled format.")
    command(child, "/set nowordwrap", "Set 'nowordwrap' mode.")
    command(child, "/set wordwrap", "Set 'wordwrap' mode.")
    command(child, "/show template", "<|im_start|>")
    command(child, "/show license", "No license was specified for this model.")
    command(child, "/set system You are a pirate.", "Set system message.")
    command(child, "/show system", "You are a pirate.")
    command(child, "/show modelfile", "FROM ")
    command(child, "/clear", "Cleared session context")
    command(child, "/load nosuch", "Couldn't find model 'nosuch'")
    command(child, "/save bad:name:x", "error: The model name 'bad:name:x' is invalid")
    command(child, "/save saved-session", "Created new model 'saved-session'")
    command(child, "/load saved-session", "Loading model 'saved-session'")
    command(child, "/show system", "You are a pirate.")
    child.send("/bye\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_set_parameter_and_show_parameters(run):
    child = run()
    out = command(child, "/set parameter", "Available Parameters:")
    assert "/set parameter num_ctx <int>          Set the context size" in out
    command(child, "/set parameter foo 1", "Couldn't set parameter: \"unknown parameter 'foo'\"")
    command(child, "/set parameter temperature 0.5", "Set parameter 'temperature' to '0.5'")
    command(child, "/set parameter stop a b", "Set parameter 'stop' to 'a, b'")
    command(child, "/set parameter seed 42", "Set parameter 'seed' to '42'")
    shown = command(child, "/show parameters", "User defined parameters:")
    assert re.search(r"^  temperature +0\.5\r?$", shown, re.M), shown
    assert re.search(r"^  seed +42\r?$", shown, re.M), shown
    assert re.search(r"^  stop +\[a b\]\r?$", shown, re.M), shown


def test_line_editing_and_history(run):
    child = run()
    # arrows: type the end of the command, go back to its start and type the beginning
    child.send("et quiet" + "\x1b[D" * 8 + "/s\r")
    child.expect_exact("Set 'quiet' mode.")
    # backspace
    child.send("/set verbosex\x7f\r")
    child.expect_exact("Set 'verbose' mode.")
    # Ctrl-U deletes before the cursor, Ctrl-W the word before it, Ctrl-A / Ctrl-E go to the ends
    command(child, "xx/set wordwrap" + "\x1b[D" * 13 + "\x15", "Set 'wordwrap' mode.")
    command(child, "/set nowordwrap extra\x17", "Set 'nowordwrap' mode.")
    command(child, "set wordwrap\x01/\x05", "Set 'wordwrap' mode.")
    # up arrow twice: the /set quiet line again
    command(child, "\x1b[A" * 5, "Set 'quiet' mode.")
    hist = (run.home / ".ollama" / "history").read_text().splitlines()
    assert hist[-6:] == ["/set quiet", "/set verbose", "/set wordwrap", "/set nowordwrap ", "/set wordwrap",
                         "/set quiet"], hist
    # a new session starts with that history
    child.send("/bye\r")
    child.expect(pexpect.EOF)
    child = run()
    command(child, "\x1b[A\x1b[A", "Set 'quiet' mode.")  # the last line is /bye


def test_ctrl_c_cancels_the_answer_and_frees_the_slot(run, srv):
    child = run()
    command(child, "/set parameter num_predict 2000", "Set parameter")
    command(child, "/set parameter temperature 0", "Set parameter")
    child.send("Count from 1 to 1000, one number per line.\r")
    child.expect_exact("one number per line.\r\n")
    child.expect(r"\d+\D+\d+\D+\d+")  # the answer is streaming
    child.send("zqzq")                # typed during the answer: not echoed into it
    child.send("\x03")
    child.expect_exact(PROMPT)
    assert "zqzq" not in child.before
    # the server let the request go: the next prompt is answered (one slot: it would wait otherwise)
    command(child, "/set parameter num_predict 8", "Set parameter")
    child.send("Say OK.\r")
    child.expect_exact(PROMPT)
    assert "zqzq" not in child.before
    ps = requests.get(srv.base + "/api/ps", timeout=10).json()
    assert [m["name"] for m in ps["models"]] == ["qwen2:latest"]


def test_ctrl_c_at_the_prompt_and_ctrl_d(run):
    child = run()
    child.send("\x03")
    child.expect_exact("Use Ctrl + d or /bye to exit.")
    child.expect_exact(PROMPT)
    child.send("some text\x03")
    child.expect_exact("Use Ctrl + d or /bye to exit.")
    child.expect_exact(PROMPT)
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_multiline_and_paste(run):
    child = run()
    command(child, "/set parameter num_predict 8", "Set parameter")
    child.send('"""\r')
    child.expect_exact("... ")
    child.expect_exact("Press Enter to send")
    child.send("First line.\r")
    child.expect_exact("... ")
    child.send('Answer with one word."""\r')
    child.expect_exact(PROMPT)
    # multi-line system message
    child.send('/set system """You are\r')
    child.expect_exact("... ")
    child.send('a cat."""\r')
    child.expect_exact("Set system message.")
    # Ollama writes the first line without a newline after it (sb.WriteString(line), then continue)
    command(child, "/show system", "You area cat.")
    # a bracketed paste of two lines becomes one message when Enter is pressed after it
    child.send("\x1b[200~/show is pasted text\rsecond line\x1b[201~")
    child.expect_exact("... ")
    child.send("\r")
    child.expect_exact(PROMPT)
    assert "Unknown command" not in child.before


def test_word_wrap_at_the_terminal_width(run):
    """The same greedy answer at 40 columns, wrapped and with --nowordwrap: wrapped lines fit in the width less
    Ollama's margin of 5, and the words are the same (none split or joined)."""
    cols = 40
    words = {}
    for wrap in (True, False):
        child = run(*([] if wrap else ["--nowordwrap"]), cols=cols)
        command(child, "/set parameter num_predict 120", "Set parameter")
        command(child, "/set parameter temperature 0", "Set parameter")
        command(child, "/set parameter cache_prompt false", "Set parameter")  # the same numerics both times
        child.send("Write three long sentences about the sea.\r")
        child.expect_exact(PROMPT)
        lines = screen(child.before, cols)
        text = [l for l in lines if l and "Write three" not in l]
        assert sum(len(l) for l in text) > 2 * cols, lines
        if wrap:
            assert max(len(l) for l in text) <= cols - 5, lines
        else:
            assert max(len(l) for l in text) > cols, lines
        words[wrap] = " ".join(text).split()
        child.send("/bye\r")
        child.expect(pexpect.EOF)
    assert words[True] == words[False], (" ".join(words[True]), " ".join(words[False]))


# ------------------------------------------------------------------------------------------------------------
# Against a scripted Ollama-compatible server: what the session sends, the thinking display, and the
# disconnect that Ctrl-C makes.

class FakeOllama:
    """A tiny Ollama API (HEAD /, /api/show, /api/generate, /api/chat, /api/create) that records the bodies
    it gets; /api/chat streams thinking, then content, and with "slow" in the last message one line every
    0.1 s for a minute, noting when the client went away."""

    def __init__(self):
        import http.server
        import json
        import threading

        fake = self
        self.bodies = []
        self.disconnected = threading.Event()
        self.chat_started = threading.Event()  # "hold" in the message: the answer waits for release
        self.release = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def reply(self, lines):
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for obj in lines:
                    data = (json.dumps(obj) + "\n").encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                fake.bodies.append((self.path, body))
                if self.path == "/api/show":
                    self.reply([{"capabilities": ["completion", "thinking"], "details": {}, "template": "T",
                                 "modelfile": "FROM x", "parameters": ""}])
                elif self.path == "/api/chat":
                    msg = lambda **kw: {"message": {"role": "assistant", **kw}, "done": False}
                    fake.chat_started.set()
                    if "hold" in body["messages"][-1]["content"]:
                        fake.release.wait(30)
                    if "slow" in body["messages"][-1]["content"]:
                        def slowly():
                            for i in range(600):
                                time.sleep(0.1)
                                yield msg(content=f"{i} ")
                        try:
                            self.reply(slowly())
                        except OSError:
                            fake.disconnected.set()
                        return
                    if "long" in body["messages"][-1]["content"]:
                        self.reply([msg(content=f"word{i} ") for i in range(60)] + [{"done": True}])
                        return
                    self.reply([msg(thinking="Let me think."), msg(content="The answer."),
                                {"message": {"role": "assistant", "content": ""}, "done": True,
                                 "total_duration": 5000000, "eval_count": 3, "eval_duration": 3000000}])
                else:
                    self.reply([{"done": True, "status": "success"}])

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def sent(self, path):
        return [b for p, b in self.bodies if p == path]


@pytest.fixture
def fake_run(orun_bin, tmp_path):
    fake = FakeOllama()
    children = []

    def start(*flags, stderr_to=None, **env_extra):
        """stderr_to: a file for stderr (stdout stays on the terminal)."""
        env = dict(os.environ, OLLAMA_HOST=f"127.0.0.1:{fake.port}", HOME=str(tmp_path), TERM="xterm-256color",
                   **env_extra)
        prog, args = orun_bin, ["run", "m", *flags]
        if stderr_to:
            prog, args = "/bin/sh", ["-c", 'exec "$0" "$@" 2>"$ORUN_TEST_STDERR"', orun_bin, *args]
            env["ORUN_TEST_STDERR"] = str(stderr_to)
        child = pexpect.spawn(prog, args, env=env, dimensions=(40, 100), encoding="utf-8", timeout=60)
        children.append(child)
        child.expect_exact(PROMPT)
        return child

    start.fake = fake
    start.tmp = tmp_path
    yield start
    for c in children:
        if c.isalive():
            c.terminate(force=True)
    fake.httpd.shutdown()


def test_thinking_display_and_requests(fake_run):
    child = fake_run()
    fake = fake_run.fake
    assert fake.sent("/api/generate")[0].get("think") is True  # a thinking model thinks unless told not to
    child.send("Hi\r")
    child.expect_exact(PROMPT)
    assert "Thinking...\r\nLet me think.\r\n...done thinking.\r\n\r\nThe answer.\r\n\r\n" in ANSI.sub("", child.before)
    assert fake.sent("/api/chat")[-1]["think"] is True
    command(child, "/set nothink", "Set 'nothink' mode.")
    command(child, "/set think high", "Set 'think' mode to 'high'.")
    command(child, "/set format json", "Set format")
    command(child, "/set parameter temperature 0.25", "Set parameter")
    command(child, "/set system Be brief.", "Set system message.")
    command(child, "Again", "The answer.")
    chat = fake.sent("/api/chat")[-1]
    assert chat["think"] == "high" and chat["format"] == "json" and chat["options"] == {"temperature": 0.25}
    assert [(m["role"], m["content"]) for m in chat["messages"]] == [
        ("user", "Hi"), ("assistant", "The answer."), ("system", "Be brief."), ("user", "Again")]
    assert chat["messages"][1]["thinking"] == "Let me think."
    command(child, "/save mine", "Created new model 'mine'")
    create = fake.sent("/api/create")[-1]
    assert create["model"] == "mine" and create["from"] == "m" and create["system"] == "Be brief."
    assert create["parameters"] == {"temperature": 0.25} and len(create["messages"]) == 5


def test_verbose_stats(fake_run):
    child = fake_run()
    command(child, "/set verbose", "Set 'verbose' mode.")
    out = command(child, "Hi", "The answer.")
    assert "total duration:       5ms" in out and "eval count:           3 token(s)" in out
    command(child, "/set quiet", "Set 'quiet' mode.")
    out = command(child, "Hi", "The answer.")
    assert "eval count" not in out


def test_hidethinking(fake_run):
    child = fake_run("--hidethinking")
    child.send("Hi\r")
    child.expect_exact(PROMPT)
    assert "The answer." in child.before
    assert "Thinking" not in child.before and "Let me think" not in child.before


def test_ctrl_c_closes_the_connection_and_keeps_the_conversation(fake_run):
    child = fake_run()
    fake = fake_run.fake
    child.send("slow please\r")
    child.expect(r"\d+ \d+ \d+ ")
    child.send("\x03")
    child.expect_exact(PROMPT)
    # Ollama prints nothing after a cancelled answer: the terminal's echo of the key ("^C", drawn by orun as
    # its echo is off during the answer) and the prompt follow the last word on the same line
    shown = ANSI.sub("", child.before)
    assert shown.endswith("^C") and "\n" not in shown, repr(child.before[-80:])
    assert fake.disconnected.wait(30), "the server did not see the client go away"
    command(child, "Next", "The answer.")
    msgs = fake.sent("/api/chat")[-1]["messages"]
    assert [(m["role"], m["content"]) for m in msgs] == [("user", "slow please"), ("user", "Next")]


def test_ctrl_c_inside_a_block_keeps_it_open(fake_run):
    """Ctrl-C in a \"\"\" block drops the lines gathered so far and shows >>> again, but the block stays open
    until its closing \"\"\" (Ollama's ErrInterrupt case resets sb, not multiline)."""
    child = fake_run()
    child.send('"""dropped\r')
    child.expect_exact("... ")
    child.send("\x03")
    child.expect_exact("Use Ctrl + d or /bye to exit.")
    child.expect_exact(PROMPT)
    child.send("kept\r")
    child.expect_exact("... ")
    command(child, 'end"""', "The answer.")
    assert fake_run.fake.sent("/api/chat")[-1]["messages"][-1]["content"] == "kept\nend"
    # the same for /set system \"\"\"
    child.send('/set system """dropped\r')
    child.expect_exact("... ")
    child.send("\x03")
    child.expect_exact(PROMPT)
    command(child, 'Be kind."""', "Set system message.")
    command(child, "/show system", "Be kind.")


def test_multiline_system_joins_as_ollama(fake_run):
    """/set system \"\"\"A, then B, then C\"\"\": no newline after the first line, one after each later one."""
    child = fake_run()
    child.send('/set system """You are\r')
    child.expect_exact("... ")
    child.send("a cat\r")
    child.expect_exact("... ")
    command(child, 'who purrs."""', "Set system message.")
    command(child, "Hi", "The answer.")
    msgs = fake_run.fake.sent("/api/chat")[-1]["messages"]
    assert msgs[0] == {"role": "system", "content": "You area cat\nwho purrs."}, msgs


def test_show_info_goes_to_stderr(fake_run, tmp_path):
    """/show info prints on stderr (Ollama: showInfo(resp, false, os.Stderr)); /show modelfile on stdout."""
    err = tmp_path / "stderr.txt"
    child = fake_run(stderr_to=err)
    child.send("/show info\r")
    child.expect_exact(PROMPT)
    assert "Capabilities" not in child.before
    command(child, "/show modelfile", "FROM x")
    child.send("/bye\r")
    child.expect(pexpect.EOF)
    text = err.read_text()
    assert "  Model\n" in text and "  Capabilities\n" in text and "thinking" in text, text
    assert "FROM x" not in text


def test_one_shot_run_wraps_on_a_terminal_only(orun_bin, fake_run):
    """`orun run m "prompt"` wraps as the interactive session does when stdout is a terminal (Ollama's
    RunHandler: opts.WordWrap = !nowrap), not with --nowordwrap, and never into a pipe (Ollama does, with
    escape sequences, at 80 columns: ollama#16785)."""
    import subprocess

    cols = 40
    env = dict(os.environ, OLLAMA_HOST=f"127.0.0.1:{fake_run.fake.port}", HOME=str(fake_run.tmp),
               TERM="xterm-256color")
    words = [f"word{i}" for i in range(60)]
    for flags in ([], ["--nowordwrap"]):
        child = pexpect.spawn(orun_bin, ["run", "m", "long please", *flags], env=env, dimensions=(40, cols),
                              encoding="utf-8", timeout=60)
        child.expect(pexpect.EOF)
        lines = [l for l in screen(child.before, cols) if l]
        assert "Thinking" not in child.before
        if flags:
            assert max(len(l) for l in lines) > cols, lines
        else:
            assert max(len(l) for l in lines) <= cols - 5, lines
        assert " ".join(lines).split() == words, lines
    p = subprocess.run([orun_bin, "run", "m", "long please"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == " ".join(words) + " \n", repr(p.stdout)


def test_ctrl_g_composes_the_prompt_in_an_editor(fake_run):
    """Ctrl-G hands the line to $OLLAMA_EDITOR; what it writes comes back to the prompt (several lines as a
    paste) and Enter sends it."""
    editor = fake_run.tmp / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "%s\\nsecond line\\n" "$(cat "$1") edited" > "$1"\n')
    editor.chmod(0o755)
    child = fake_run(OLLAMA_EDITOR=str(editor))
    child.send("draft\x07")
    child.expect_exact("second line")
    command(child, "", "The answer.")
    assert fake_run.fake.sent("/api/chat")[-1]["messages"][-1]["content"] == "draft edited\nsecond line"
    child = fake_run(OLLAMA_EDITOR="/nonexistent/editor")
    child.send("draft\x07")
    child.expect_exact('error: editor "/nonexistent/editor" not found, set OLLAMA_EDITOR to the path of your '
                       'preferred editor')
    child.expect_exact(PROMPT)


def test_ctrl_j_continues_the_message_on_a_new_line(fake_run):
    child = fake_run()
    child.send("first\n")
    child.expect_exact("... ")
    command(child, "second", "The answer.")
    assert fake_run.fake.sent("/api/chat")[-1]["messages"][-1]["content"] == "first\nsecond"


def test_keys_typed_during_an_answer_wait_for_the_prompt(fake_run):
    """Not echoed into the answer; Enter among them sends the line at the next prompt."""
    child = fake_run()
    fake = fake_run.fake
    child.send("hold on\r")
    assert fake.chat_started.wait(30)
    child.send("/set verbose\r")
    fake.release.set()
    child.expect_exact("The answer.")
    child.expect_exact(PROMPT)
    assert "/set verbose" not in child.before
    child.expect_exact("Set 'verbose' mode.")
