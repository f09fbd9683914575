#!/usr/bin/env python3
"""Tests of `nascent generate` and `nascent chat` on a small random-weight
LLaMA file written here (F32, GQA, a byte-level SentencePiece vocabulary):
greedy determinism, the logits dump against greedy ids, --device
(cpu:composed gives the same greedy text and logits within float noise),
stop strings, a draft model (--model-draft), piped chat, and argument
errors.

Usage: generate_cli_test.py NASCENT_BINARY
Exit status: 0 passed, 1 failed.
"""
import os
import random
import struct
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(binary, *args, stdin=None):
    return subprocess.run([binary, *args], input=stdin, capture_output=True)


def gguf_string(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, value):
    """vtype: 'u32', 'f32', 'str', or ('arr', elem) with elem 'str'/'f32'/'i32'."""
    out = gguf_string(key)
    scalar = {"u32": (4, "<I"), "f32": (6, "<f"), "i32": (5, "<i")}
    if vtype == "str":
        return out + struct.pack("<I", 8) + gguf_string(value)
    if isinstance(vtype, tuple):
        elem = vtype[1]
        out += struct.pack("<I", 9)
        if elem == "str":
            out += struct.pack("<IQ", 8, len(value))
            return out + b"".join(gguf_string(v) for v in value)
        code, fmt = scalar[elem]
        out += struct.pack("<IQ", code, len(value))
        return out + b"".join(struct.pack(fmt, v) for v in value)
    code, fmt = scalar[vtype]
    return out + struct.pack("<I", code) + struct.pack(fmt, value)


DEFAULT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n"
                    "{{ m.content }}<|im_end|>\n{% endfor %}")


def write_model(path, seed=1, chat_template=DEFAULT_TEMPLATE,
                extra_control_tokens=()):
    """chat_template None: no tokenizer.chat_template key."""
    rng = random.Random(seed)
    d, n_layer, n_head, n_kv, n_ff = 64, 2, 4, 2, 96
    hd = d // n_head
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += ["\u2581the", "<|im_start|>", "<|im_end|>"]
    types = [2, 3, 3] + [6] * 256 + [1, 3, 3]
    tokens += list(extra_control_tokens)
    types += [3] * len(extra_control_tokens)
    n_vocab = len(tokens)
    meta = [
        kv("general.architecture", "str", "llama"),
        kv("llama.context_length", "u32", 1024),
        kv("llama.embedding_length", "u32", d),
        kv("llama.block_count", "u32", n_layer),
        kv("llama.feed_forward_length", "u32", n_ff),
        kv("llama.attention.head_count", "u32", n_head),
        kv("llama.attention.head_count_kv", "u32", n_kv),
        kv("llama.attention.layer_norm_rms_epsilon", "f32", 1e-5),
        kv("tokenizer.ggml.model", "str", "llama"),
        kv("tokenizer.ggml.tokens", ("arr", "str"), tokens),
        kv("tokenizer.ggml.scores", ("arr", "f32"), [0.0] * n_vocab),
        kv("tokenizer.ggml.token_type", ("arr", "i32"), types),
        kv("tokenizer.ggml.bos_token_id", "u32", 1),
        kv("tokenizer.ggml.eos_token_id", "u32", 2),
    ]
    if chat_template is not None:
        meta.append(kv("tokenizer.chat_template", "str", chat_template))
    shapes = [("token_embd.weight", n_vocab, d, 1.0, 0.0),
              ("output_norm.weight", 1, d, 0.1, 1.0),
              ("output.weight", n_vocab, d, d ** -0.5, 0.0)]
    for l in range(n_layer):
        p = f"blk.{l}."
        shapes += [(p + "attn_norm.weight", 1, d, 0.1, 1.0),
                   (p + "attn_q.weight", n_head * hd, d, d ** -0.5, 0.0),
                   (p + "attn_k.weight", n_kv * hd, d, d ** -0.5, 0.0),
                   (p + "attn_v.weight", n_kv * hd, d, d ** -0.5, 0.0),
                   (p + "attn_output.weight", d, n_head * hd, d ** -0.5, 0.0),
                   (p + "ffn_norm.weight", 1, d, 0.1, 1.0),
                   (p + "ffn_gate.weight", n_ff, d, d ** -0.5, 0.0),
                   (p + "ffn_up.weight", n_ff, d, d ** -0.5, 0.0),
                   (p + "ffn_down.weight", d, n_ff, n_ff ** -0.5, 0.0)]
    infos, data = b"", b""
    for name, rows, cols, scale, mean in shapes:
        dims = [cols] if rows == 1 else [cols, rows]  # ggml order: ne0 first.
        infos += gguf_string(name) + struct.pack("<I", len(dims))
        infos += b"".join(struct.pack("<Q", x) for x in dims)
        infos += struct.pack("<IQ", 0, len(data))  # F32, offset.
        data += struct.pack(f"<{rows * cols}f", *[rng.gauss(mean, scale)
                                                 for _ in range(rows * cols)])
        data += b"\0" * (-len(data) % 32)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(shapes), len(meta))
    head += b"".join(meta) + infos
    head += b"\0" * (-len(head) % 32)
    open(path, "wb").write(head + data)
    return n_vocab


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m.gguf")
        n_vocab = write_model(model)
        greedy = ["generate", "-m", model, "--temp", "0", "--ignore-eos"]

        # Greedy: the same text twice; timings on stderr only.
        a = run(binary, *greedy, "-p", "the cat", "-n", "24")
        b = run(binary, *greedy, "-p", "the cat", "-n", "24")
        check(a.returncode == 0 and a.stdout == b.stdout and
              len(a.stdout) > 1, f"greedy: {a.returncode} {a.stderr!r}")
        check(b"prompt eval" in a.stderr and b"23 runs" in a.stderr and
              b"prompt eval" not in a.stdout, f"timings: {a.stderr!r}")

        # The dump: [n_tokens, n_vocab] f32; a prefix gives the same rows
        # (causality, and the cache does not leak between positions); the
        # greedy id after the prompt is the argmax of the last row.
        ids = [1, 260, 65, 66, 67, 3, 200]
        dump = os.path.join(tmp, "logits.bin")
        r = run(binary, *greedy, "--tokens", ",".join(map(str, ids)),
                "--dump-logits", dump, "-n", "0")
        raw = open(dump, "rb").read() if os.path.exists(dump) else b""
        check(r.returncode == 0 and len(raw) == 4 * len(ids) * n_vocab,
              f"dump size: {len(raw)} {r.stderr!r}")
        rows = [struct.unpack_from(f"<{n_vocab}f", raw, 4 * n_vocab * i)
                for i in range(len(raw) // (4 * n_vocab))]
        dump3 = os.path.join(tmp, "logits3.bin")
        run(binary, *greedy, "--tokens", ",".join(map(str, ids[:3])),
            "--dump-logits", dump3, "-n", "0")
        raw3 = open(dump3, "rb").read()
        rows3 = [struct.unpack_from(f"<{n_vocab}f", raw3, 4 * n_vocab * i)
                 for i in range(3)]
        check(len(rows) == len(ids) and all(
            max(abs(x - y) for x, y in zip(rows[i], rows3[i])) < 1e-4
            for i in range(3)), "prefix rows differ")
        r = run(binary, *greedy, "--tokens", ",".join(map(str, ids)), "-n",
                "3", "--print-ids")
        got = [int(x) for x in r.stdout.decode().strip()[1:-1].split(",")]
        want = max(range(n_vocab), key=lambda j: rows[-1][j])
        check(r.returncode == 0 and len(got) == 3 and got[0] == want,
              f"--print-ids {r.stdout!r} vs argmax {want}")

        # The CPU with its fused transformer kernels hidden: the composed
        # defaults compute the same model.
        c = run(binary, *greedy, "-p", "the cat", "-n", "24", "-d",
                "cpu:composed")
        check(c.returncode == 0 and c.stdout == a.stdout,
              f"--device cpu:composed: {c.stdout!r} vs {a.stdout!r} "
              f"{c.stderr!r}")
        dumpc = os.path.join(tmp, "logits_c.bin")
        r = run(binary, *greedy, "--tokens", ",".join(map(str, ids)),
                "--dump-logits", dumpc, "-n", "0", "--device", "cpu:composed")
        rawc = open(dumpc, "rb").read() if os.path.exists(dumpc) else b""
        rowsc = [struct.unpack_from(f"<{n_vocab}f", rawc, 4 * n_vocab * i)
                 for i in range(len(rawc) // (4 * n_vocab))]
        check(r.returncode == 0 and len(rowsc) == len(rows) and all(
            max(abs(x - y) for x, y in zip(rows[i], rowsc[i])) < 1e-4
            for i in range(len(rows))), f"composed logits {r.stderr!r}")
        for args in (["generate", "-p", "x"], ["chat"]):
            r = run(binary, *args, "-m", model, "-d", "tpu", stdin=b"")
            check(r.returncode != 0 and b"unknown device 'tpu'" in r.stderr,
                  f"{args[0]} --device tpu: {r.stderr!r}")

        # A stop string from the greedy text ends it there.
        text = a.stdout.decode(errors="replace").rstrip("\n")
        stop = next((c for c in text[len(text) // 2:] if c.isascii() and
                     c.isprintable() and c != "\\"), None)
        if stop is not None:
            r = run(binary, *greedy, "-p", "the cat", "-n", "24", "-r", stop)
            check(r.stdout.decode(errors="replace") ==
                  text[:text.index(stop)] + "\n",
                  f"stop {stop!r}: {r.stdout!r} vs {text!r}")

        # A draft model: greedy gives the target's text (stop strings
        # included); sampling is seeded.
        draft = os.path.join(tmp, "draft.gguf")
        write_model(draft, seed=2)
        r = run(binary, *greedy, "-p", "the cat", "-n", "24", "-md", draft,
                "--draft", "3")
        check(r.returncode == 0 and r.stdout == a.stdout and
              b"drafted tokens accepted" in r.stderr,
              f"-md greedy: {r.stdout!r} vs {a.stdout!r} {r.stderr!r}")
        if stop is not None:
            r = run(binary, *greedy, "-p", "the cat", "-n", "24", "-r", stop,
                    "-md", model)
            check(r.stdout.decode(errors="replace") ==
                  text[:text.index(stop)] + "\n",
                  f"-md stop {stop!r}: {r.stdout!r} vs {text!r}")
        sampled = ["generate", "-m", model, "-md", draft, "--temp", "0.8",
                   "-s", "5", "-p", "the cat", "-n", "16", "--print-ids"]
        r, r2 = run(binary, *sampled), run(binary, *sampled)
        check(r.returncode == 0 and r.stdout == r2.stdout and
              len(r.stdout.split(b",")) == 16,
              f"-md sampled: {r.stdout!r} {r2.stdout!r} {r.stderr!r}")

        # Chat from a pipe: a reply per line; the second turn reuses the
        # cached first, a long message, and evaluates far fewer tokens.
        r = run(binary, "chat", "-m", model, "--temp", "0", "-n", "6",
                "--timings", "--ignore-eos",
                stdin=b"a" * 300 + b"\nhow are you\n")
        err = r.stderr.decode()
        evals = [int(l.split("/")[1].split()[0]) for l in err.splitlines()
                 if "prompt eval" in l]
        check(r.returncode == 0 and len(evals) == 2 and evals[0] > 300 and
              0 < evals[1] < 100, f"chat: {r.returncode} {err!r}")

        # Errors.
        r = run(binary, "generate", "-m", model, "--tokens", "1,x")
        check(r.returncode == 1 and b"'x' is not a token id" in r.stderr,
              f"bad --tokens: {r.stderr!r}")
        r = run(binary, "generate", "-m", model, "--tokens", f"1,{n_vocab}")
        check(r.returncode == 1 and b"outside the vocabulary" in r.stderr,
              f"id out of range: {r.stderr!r}")
        r = run(binary, "generate", "-m", model, "-p", "x", "--tokens", "1")
        check(r.returncode != 0 and b"excludes" in r.stderr,
              f"two prompts: {r.stderr!r}")
    if failures:
        print(f"FAILED: {len(failures)} checks")
        return 1
    print("generate/chat cli: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
