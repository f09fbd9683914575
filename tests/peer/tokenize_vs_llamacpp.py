#!/usr/bin/env python3
"""Compares `nascent tokenize` with llama.cpp's tokenizer (the peer, through
llama-cpp-python with vocab_only=True) on llama.cpp's vocab files: their
.inp test texts, extra hand-picked strings and seeded random strings, with
special-token parsing on and off. The gpt-2 vocabulary is also rewritten
with the llama3 ("llama-bpe") and qwen2 pre-tokenizers to compare those.

Usage: tokenize_vs_llamacpp.py NASCENT_BINARY DATA_DIR
Exit status: 0 all equal, 1 a difference, 77 skipped (llama-cpp-python or
the data missing; the reason is printed).
"""
import os
import random
import struct
import subprocess
import sys
import tempfile

SKIP = 77


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(SKIP)


# --- a minimal GGUF metadata rewriter (the vocab files have no tensors) ---

def read_gguf_kv(path):
    data = open(path, "rb").read()
    assert data[:4] == b"GGUF"
    version, n_tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    assert n_tensors == 0, "only tensor-less files are rewritten"
    pos = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8,
             12: 8}

    def skip_value(t, pos):
        if t == 8:
            (n,) = struct.unpack_from("<Q", data, pos)
            return pos + 8 + n
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, pos)
            pos += 12
            for _ in range(n):
                pos = skip_value(et, pos)
            return pos
        return pos + sizes[t]

    entries = []
    for _ in range(n_kv):
        (n,) = struct.unpack_from("<Q", data, pos)
        key = data[pos + 8:pos + 8 + n].decode()
        start = pos
        pos += 8 + n
        (t,) = struct.unpack_from("<I", data, pos)
        pos = skip_value(t, pos + 4)
        entries.append((key, data[start:pos]))
    return version, entries


def string_kv(key, value):
    k, v = key.encode(), value.encode()
    return struct.pack("<Q", len(k)) + k + struct.pack("<IQ", 8, len(v)) + v


def with_pre_tokenizer(src, dst, pre):
    version, entries = read_gguf_kv(src)
    out = [raw if key != "tokenizer.ggml.pre" else string_kv(key, pre)
           for key, raw in entries]
    with open(dst, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", version, 0, len(out)))
        f.write(b"".join(out))


# --- texts ---

def vocab_test_texts(path):
    """The .inp texts and the ids the .out file gives for each."""
    text = open(path + ".inp", encoding="utf-8", newline="").read()
    parts = text.split("\n__ggml_vocab_test__\n")[:-1]
    lines = open(path + ".out", encoding="utf-8").read().split("\n")
    return [(p.encode(), [int(x) for x in line.split()])
            for p, line in zip(parts, lines)]


EXTRA = [
    "Hello world", " leading space", "trailing space ", "  two  spaces  ",
    "new\nline\r\nwindows\rold mac", "\t\ttabs\tinside\t",
    "I'm sure they'LL say it's fine, don'T you think?",
    "numbers: 1 12 123 1234 12345 123456 3.14159 1,000,000",
    "caf\u00e9 na\u00efve \u00c5ngstr\u00f6m \u00df \u1e9e",
    "\u4e2d\u6587\u5b57\u7b26 \u65e5\u672c\u8a9e \ud55c\uad6d\uc5b4",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0645\u0631\u062d\u0628\u0627 "
    "\u05e9\u05dc\u05d5\u05dd",
    "emoji \U0001f999\U0001f468\u200d\U0001f469\u200d\U0001f467 \u2764\ufe0f",
    "\u00a0nbsp\u3000ideographic\u2028line sep\u0085nel",
    "\u00bd \u00b2 \u2167 \u0663\u0664 \uff11\uff12\uff13",
    "e\u0301 combining a\u0308 marks",
    "<s>special</s> tokens <unk> <|endoftext|> <s",
    "def f(x):\n    return x ** 2  # comment\n",
    "{\"json\": [1, 2, {\"k\": null}]}",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 8,
    "\n\n\n", " ", "'", "''s", "a'S b'Ll c'VE",
]
SPECIAL_MARKERS = ("<s>", "</s>", "<unk>", "<|endoftext|>")

POOL = (list("abcXYZ019 .,!?'\"-_()[]{}<>/\\\t\n\r") +
        ["'s", "'LL", "  ", "\u00e9", "\u00df", "\u03b1", "\u0416",
         "\u4e2d", "\u0928", "\u094d", "\u0301", "\U0001f999", "\u200d",
         "\u00a0", "\u3000", "\u2028", "\u0085", "\u00bd", "\u2167",
         "\uff11", "\u0663", "\ufffd", "<s>", "<|endoftext|>"])


def random_texts(seed, n):
    rng = random.Random(seed)
    return ["".join(rng.choice(POOL) for _ in range(rng.randint(1, 40)))
            for _ in range(n)]


def random_bytes(seed, n):
    rng = random.Random(seed)
    return [bytes(rng.randrange(256) for _ in range(rng.randint(1, 24)))
            for _ in range(n)]


# --- the two tokenizers ---

def nascent_ids(binary, model, text, special, tmp):
    path = os.path.join(tmp, "text.bin")
    with open(path, "wb") as f:
        f.write(text)
    args = [binary, "tokenize", "-m", model, "-f", path, "--ids", "--no-bos",
            "--no-escape"]
    if not special:
        args.append("--no-parse-special")
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    line = out.stdout.strip().splitlines()[-1]
    return [int(x) for x in line.strip("[]").split(",") if x.strip()]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    binary, data_dir = sys.argv[1], sys.argv[2]
    try:
        import llama_cpp
    except ImportError:
        skip(f"llama-cpp-python is not installed for {sys.executable} "
             "(bash scripts/setup_peer.sh installs it into build/venv)")
    spm = os.path.join(data_dir, "tokenizer", "ggml-vocab-llama-spm.gguf")
    gpt2 = os.path.join(data_dir, "tokenizer", "ggml-vocab-gpt-2.gguf")
    for f in (spm, gpt2):
        if not os.path.exists(f):
            skip(f"shared test data {f} is absent")
    if not os.access(binary, os.X_OK):
        print(f"FAILED: {binary} is not an executable")
        return 1
    print(f"peer: llama-cpp-python {llama_cpp.__version__}")

    failures = 0
    compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        llama3 = os.path.join(tmp, "gpt2-llama-bpe.gguf")
        qwen2 = os.path.join(tmp, "gpt2-qwen2.gguf")
        with_pre_tokenizer(gpt2, llama3, "llama-bpe")
        with_pre_tokenizer(gpt2, qwen2, "qwen2")
        vocabs = [("llama-spm", spm, vocab_test_texts(spm)),
                  ("gpt-2", gpt2, vocab_test_texts(gpt2)),
                  ("gpt-2 vocab, llama-bpe pre-tokenizer", llama3, []),
                  ("gpt-2 vocab, qwen2 pre-tokenizer", qwen2, [])]
        extra = [t.encode() for t in EXTRA + random_texts(1, 40)]
        gpt2_ids = {}  # What the plain gpt-2 pre-tokenizer gives.
        for name, model, vectors in vocabs:
            llm = llama_cpp.Llama(model_path=model, vocab_only=True,
                                  verbose=False)
            # The peer itself must give the published vectors, or the
            # comparison proves nothing.
            for text, ids in vectors:
                if llm.tokenize(text, add_bos=False, special=False) != ids:
                    print(f"FAILED: llama.cpp does not reproduce {model}.out "
                          f"for {text!r}")
                    return 1
            texts = [text for text, _ in vectors] + extra
            if name == "llama-spm":
                # SentencePiece splits bytes, so any bytes compare exactly.
                # (Byte-level BPE decodes UTF-8 first, and there llama.cpp
                # accepts overlong forms and surrogates, and aborts on code
                # points past U+10FFFF, where nascent reads each bad byte as
                # U+FFFD: only valid UTF-8 is compared.)
                texts += random_bytes(2, 30)
            n_bad = 0
            n = 0
            special_matters = 0
            pre_matters = 0
            for text in texts:
                specials = [False]
                if any(m.encode() in text for m in SPECIAL_MARKERS):
                    specials.append(True)
                results = []
                for special in specials:
                    want = llm.tokenize(text, add_bos=False, special=special)
                    got = nascent_ids(binary, model, text, special, tmp)
                    results.append(want)
                    n += 1
                    if got != want:
                        n_bad += 1
                        if n_bad <= 5:
                            print(f"  DIFF {name} special={special} "
                                  f"{text[:60]!r}\n    llama.cpp {want}\n"
                                  f"    nascent   {got}")
                special_matters += len(results) == 2 and results[0] != results[1]
                if model == gpt2:
                    gpt2_ids[text] = results[0]
                elif text in gpt2_ids:
                    pre_matters += gpt2_ids[text] != results[0]
            print(f"{name}: {n - n_bad}/{n} tokenizations equal "
                  f"({special_matters} texts tokenize differently with "
                  "special-token parsing)")
            if special_matters == 0:
                print(f"FAILED: {name}: special-token parsing never mattered; "
                      "the flag does not reach the tokenizers")
                failures += 1
            if name.startswith("gpt-2 vocab,"):
                print(f"  ({pre_matters} texts split differently from gpt-2)")
                if pre_matters == 0:
                    print(f"FAILED: {name}: the pre-tokenizer never mattered")
                    failures += 1
            failures += n_bad
            compared += n
            del llm
    if failures:
        print(f"FAILED: {failures} of {compared} tokenizations differ")
        return 1
    print(f"all {compared} tokenizations equal llama.cpp's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
