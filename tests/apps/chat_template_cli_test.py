#!/usr/bin/env python3
"""`nascent chat` and `nascent chat-template` with real chat templates, on
small random-weight models: the prompt --verbose-prompt shows equals Jinja2's
rendering of the model's template (a Qwen-style and a Llama-3-style one, the
real files from DATA_DIR/templates when present), for the first turn and
for the second (which holds the first reply), and for `generate --chat`'s
single turn; the template's end-of-turn token is found; --chat-template
NAME|FILE and --chat-template-kwargs work; templates that cannot be
rendered fail with errors that say how to override them.

Usage: chat_template_cli_test.py NASCENT_BINARY [DATA_DIR]
Exit status: 0 passed, 1 failed, 77 skipped (no jinja2).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "peer"))
try:
    import jinja2  # noqa: F401
except ImportError:
    print("SKIP: python3 jinja2 is not installed (apt-get install python3-jinja2)")
    sys.exit(77)
from chat_templates_vs_jinja2 import jinja_env  # noqa: E402
from generate_cli_test import write_model  # noqa: E402

failures = []

# Short stand-ins when the real templates are not there.
QWEN_STYLE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if not (message.role == 'system' and loop.first) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + "
    "'<|im_end|>' + '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}")
LLAMA3_STYLE = (
    "{{- bos_token }}{%- set date_string = strftime_now('%d %b %Y') %}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
    " + message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}")
LLAMA3_TOKENS = ["<|begin_of_text|>", "<|start_header_id|>",
                 "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>",
                 "<|python_tag|>"]


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(binary, *args, stdin=None):
    return subprocess.run([binary, *args], input=stdin, capture_output=True)


def prompts(stderr):
    """The prompts --verbose-prompt printed, in order."""
    out, text = [], stderr.decode("utf-8", "replace")
    while True:
        i = text.find(" tokens):\n")
        if i < 0:
            return out
        j = text.find("\n[end of prompt]\n", i)
        out.append(text[i + len(" tokens):\n"):j])
        text = text[j + 1:]


def template(data_dir, name, fallback):
    path = os.path.join(data_dir or "", "templates", name)
    if data_dir and os.path.exists(path):
        return open(path, encoding="utf-8").read(), True
    return fallback, False


def chat_matches_jinja(binary, tmp, label, source, extra_tokens, eot):
    model = os.path.join(tmp, label + ".gguf")
    write_model(model, chat_template=source, extra_control_tokens=extra_tokens)
    env = jinja_env()
    system, first, second = "Be brief.", "Hello there, ünïcode 你好", "Again?"
    r = run(binary, "chat", "-m", model, "--temp", "0", "-n", "3",
            "--verbose-prompt", "--system-prompt", system,
            stdin=(first + "\n" + second + "\n").encode())
    got = prompts(r.stderr)
    check(r.returncode == 0 and len(got) == 2,
          f"{label}: chat ran, two prompts: {r.returncode} {r.stderr[-300:]!r}")
    if len(got) != 2:
        return
    msgs = [{"role": "system", "content": system},
            {"role": "user", "content": first}]
    bos, eos = "<s>", "</s>"
    want = env.from_string(source).render(
        messages=msgs, tools=None, documents=None, add_generation_prompt=True,
        bos_token=bos, eos_token=eos)
    check(got[0] == want, f"{label}: first prompt\n{got[0]!r}\nvs jinja2\n{want!r}")
    # generate --chat renders the same single turn.
    r1 = run(binary, "generate", "-m", model, "--chat", "--temp", "0", "-n",
             "3", "--verbose-prompt", "--system-prompt", system, "-p", first)
    check(r1.returncode == 0 and prompts(r1.stderr) == [want],
          f"{label}: generate --chat prompt {r1.stderr[-400:]!r}")
    # The second prompt holds the first reply: one of stdout's line splits.
    out = r.stdout.decode("utf-8", "replace")
    ok = False
    for i, c in enumerate(out):
        if c != "\n":
            continue
        turn = msgs + [{"role": "assistant", "content": out[:i]},
                       {"role": "user", "content": second}]
        if got[1] == env.from_string(source).render(
                messages=turn, tools=None, documents=None,
                add_generation_prompt=True, bos_token=bos, eos_token=eos):
            ok = True
            break
    check(ok, f"{label}: second prompt {got[1]!r} is no Jinja2 rendering "
              f"with the reply {out!r}")
    check(f"'{eot}'".encode() in r.stderr,
          f"{label}: end-of-turn token {eot}: {r.stderr[:300]!r}")


def main():
    binary = sys.argv[1]
    data_dir = sys.argv[2] if len(sys.argv) > 2 else None
    qwen, real_q = template(data_dir, "Qwen-Qwen2.5-7B-Instruct.jinja",
                            QWEN_STYLE)
    llama3, real_l = template(data_dir, "meta-llama-Llama-3.1-8B-Instruct.jinja",
                              LLAMA3_STYLE)
    print(f"templates: {'real' if real_q else 'stand-in'} Qwen2.5, "
          f"{'real' if real_l else 'stand-in'} Llama-3.1")
    with tempfile.TemporaryDirectory() as tmp:
        chat_matches_jinja(binary, tmp, "qwen", qwen, [], "<|im_end|>")
        chat_matches_jinja(binary, tmp, "llama3", llama3, LLAMA3_TOKENS,
                           "<|eot_id|>")

        # Overrides: a built-in name, a file, extra variables.
        model = os.path.join(tmp, "plain.gguf")
        write_model(model)
        r = run(binary, "chat", "-m", model, "--temp", "0", "-n", "1",
                "--verbose-prompt", "--chat-template", "llama3",
                stdin=b"hi\n")
        check(prompts(r.stderr)[:1] == [
            "<s><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n"],
            f"--chat-template llama3: {r.stderr!r}")
        path = os.path.join(tmp, "qwen.jinja")
        open(path, "w", encoding="utf-8").write(QWEN_STYLE)
        r = run(binary, "chat", "-m", model, "--temp", "0", "-n", "1",
                "--verbose-prompt", "--chat-template", path,
                "--chat-template-kwargs", '{"enable_thinking": false}',
                stdin=b"hi\n")
        check(prompts(r.stderr)[:1] == [
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
            "<think>\n\n</think>\n\n"],
            f"--chat-template FILE --chat-template-kwargs: {r.stderr!r}")
        r = run(binary, "chat-template", "render", "--template", "chatml",
                "--messages", '[{"role": "user", "content": "x"}]',
                "--add-generation-prompt")
        check(r.stdout == b"<|im_start|>user\nx<|im_end|>\n"
                          b"<|im_start|>assistant\n",
              f"chat-template render chatml: {r.stdout!r} {r.stderr!r}")
        r = run(binary, "chat-template", "list")
        check(r.stdout.split() == [b"chatml", b"llama2", b"llama3", b"gemma",
                                   b"phi3"], f"chat-template list: {r.stdout!r}")

        # Errors say what failed, where, and how to override.
        broken = os.path.join(tmp, "broken.gguf")
        write_model(broken, chat_template="line 1\n{% for m in messages %}")
        r = run(binary, "chat", "-m", broken, stdin=b"hi\n")
        err = r.stderr.decode()
        check(r.returncode != 0 and "cannot be parsed" in err and
              "line 2" in err and "--chat-template" in err,
              f"unparsable template: {err!r}")
        rejecting = os.path.join(tmp, "rejecting.gguf")
        write_model(rejecting, chat_template=(
            "{% if messages[0].role != 'system' %}"
            "{{ raise_exception('a system message comes first') }}{% endif %}"))
        r = run(binary, "chat", "-m", rejecting, stdin=b"hi\n")
        err = r.stderr.decode()
        check(r.returncode != 0 and "rejected the conversation" in err and
              "a system message comes first" in err,
              f"template raising: {err!r}")
        unrenderable = os.path.join(tmp, "unrenderable.gguf")
        write_model(unrenderable, chat_template="{{ messages | nofilter }}")
        r = run(binary, "chat", "-m", unrenderable, stdin=b"hi\n")
        err = r.stderr.decode()
        check(r.returncode != 0 and "no filter named 'nofilter'" in err and
              "--chat-template" in err, f"unknown filter: {err!r}")
        none = os.path.join(tmp, "none.gguf")
        write_model(none, chat_template=None)
        r = run(binary, "chat", "-m", none, stdin=b"hi\n")
        err = r.stderr.decode()
        check(r.returncode != 0 and "no tokenizer.chat_template" in err and
              "--chat-template" in err, f"no template: {err!r}")
        r = run(binary, "chat", "-m", model, "--chat-template", "nosuch",
                stdin=b"hi\n")
        check(r.returncode != 0 and b"neither a readable file nor a built-in"
              in r.stderr, f"unknown --chat-template: {r.stderr!r}")
        r = run(binary, "chat", "-m", model, "--chat-template-kwargs", "[1",
                stdin=b"hi\n")
        check(r.returncode != 0 and b"--chat-template-kwargs: bad JSON"
              in r.stderr, f"bad kwargs: {r.stderr!r}")
        r = run(binary, "generate", "-m", model, "-p", "x",
                "--chat-template", "chatml")
        check(r.returncode != 0 and b"need --chat" in r.stderr,
              f"generate --chat-template without --chat: {r.stderr!r}")
        r = run(binary, "chat-template", "render", "--template", "chatml",
                "--messages", '{"role": "user"}')
        check(r.returncode != 0 and b"expected a JSON list" in r.stderr,
              f"render, messages not a list: {r.stderr!r}")
    if failures:
        print(f"FAILED: {len(failures)} checks")
        return 1
    print("chat template cli: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
