#!/usr/bin/env python3
"""Trains tokenizers with `nascent train-tokenizer` on Debian's fortunes
(every tenth record held out), puts each into a random-weight model with
`nascent make-model --vocab`, loads that in llama.cpp (the peer, through
llama-cpp-python) and requires llama.cpp's token ids to equal `nascent
tokenize`'s on held-out text, extra hand-picked strings (characters and
bytes the corpus never had, special-token texts) and seeded random strings,
with and without BOS; and llama.cpp's pieces to spell the text back.

Trained: spm-bpe, and byte-bpe with the gpt-2 and qwen2 pre-tokenizers.

Usage: trained_tokenizer_vs_llamacpp.py NASCENT_BINARY [VOCAB_SIZE]
Exit status: 0 all equal, 1 a difference, 77 skipped (llama-cpp-python or
the fortunes package missing; the reason is printed).
"""
import os
import random
import subprocess
import sys
import tempfile

SKIP = 77
FORTUNES = "/usr/share/games/fortunes"

EXTRA = [
    "Hello world", " leading space", "trailing space ", "  two  spaces  ",
    "new\nline\r\nwindows\rold mac", "\t\ttabs\tinside\t",
    "I'm sure they'LL say it's fine, don'T you think?",
    "numbers: 1 12 123 1234 12345 3.14159 1,000,000",
    "caf\u00e9 na\u00efve \u00c5ngstr\u00f6m \u00df",
    "\u4e2d\u6587\u5b57\u7b26 \u65e5\u672c\u8a9e \ud55c\uad6d\uc5b4",
    "emoji \U0001f999\U0001f468\u200d\U0001f469\u200d\U0001f467",
    "\u00a0nbsp\u3000ideographic",
    "e\u0301 combining a\u0308 marks",
    "<s>special</s> tokens <unk> <|endoftext|> <s",
    "def f(x):\n    return x ** 2  # comment\n",
    "\n\n\n", " ", "'", "''s", "a'S b'Ll c'VE", "\x01\x02\x7f control",
]
POOL = (list("abcetnoXYZ019 .,!?'\"-_()[]{}<>/\\\t\n\r") +
        ["the", " the", "'s", "  ", "\u00e9", "\u03b1", "\u4e2d",
         "\U0001f999", "\u00a0", "<s>", "</s>", "<|endoftext|>"])


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(SKIP)


def fortune_records():
    """The records of every fortune file, in file-name order (as
    tests/tokenizer/trainer_test.cpp reads them)."""
    records = []
    for name in sorted(os.listdir(FORTUNES)):
        path = os.path.join(FORTUNES, name)
        if "." in name or os.path.islink(path) or not os.path.isfile(path):
            continue
        data = open(path, "rb").read()
        lines = data.split(b"\n")
        if data.endswith(b"\n"):
            lines.pop()
        record = b""
        for line in lines:
            if line == b"%":
                if record:
                    records.append(record)
                record = b""
            else:
                record += line + b"\n"
        if record:
            records.append(record)
    return records


def random_texts(seed, n):
    rng = random.Random(seed)
    return ["".join(rng.choice(POOL) for _ in range(rng.randint(1, 40)))
            .encode() for _ in range(n)]


def random_bytes(seed, n):
    rng = random.Random(seed)
    return [bytes(rng.randrange(256) for _ in range(rng.randint(1, 24)))
            for _ in range(n)]


def nascent_ids(binary, model, text, bos, tmp):
    path = os.path.join(tmp, "text.bin")
    with open(path, "wb") as f:
        f.write(text)
    args = [binary, "tokenize", "-m", model, "-f", path, "--ids",
            "--no-escape", "--no-parse-special"]
    if not bos:
        args.append("--no-bos")
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    line = out.stdout.strip().splitlines()[-1]
    return [int(x) for x in line.strip("[]").split(",") if x.strip()]


def run(args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    binary = sys.argv[1]
    vocab_size = sys.argv[2] if len(sys.argv) == 3 else "4096"
    try:
        import llama_cpp
    except ImportError:
        skip(f"llama-cpp-python is not installed for {sys.executable} "
             "(bash scripts/setup_peer.sh installs it into build/venv)")
    if not os.path.isdir(FORTUNES):
        skip(f"{FORTUNES} is absent (Debian's fortunes package; "
             "scripts/setup.sh installs it)")
    if not os.access(binary, os.X_OK):
        print(f"FAILED: {binary} is not an executable")
        return 1
    print(f"peer: llama-cpp-python {llama_cpp.__version__}")

    records = fortune_records()
    train = [r for i, r in enumerate(records) if i % 10 != 9]
    held = [r for i, r in enumerate(records) if i % 10 == 9]
    # Single records, then the rest in chunks of 20 (longer texts).
    texts = held[:60] + [b"".join(held[i:i + 20])
                         for i in range(60, len(held), 20)]
    n_held = len(texts)
    texts += [t.encode() for t in EXTRA] + random_texts(1, 40)

    failures = 0
    compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "train.txt")
        with open(corpus, "wb") as f:
            f.write(b"%\n".join(train))
        for kind, extra_args in [("spm-bpe", []),
                                 ("byte-bpe", ["--pre", "gpt-2"]),
                                 ("byte-bpe", ["--pre", "qwen2"])]:
            name = " ".join([kind] + extra_args)
            vocab = os.path.join(tmp, "vocab.gguf")
            model = os.path.join(tmp, "model.gguf")
            subprocess.run([binary, "train-tokenizer", "--corpus", corpus,
                            "--kind", kind, "--vocab-size", vocab_size,
                            "-o", vocab] + extra_args, check=True)
            run([binary, "make-model", model, "--vocab", vocab, "--dim", "64",
                 "--layers", "1", "--heads", "2", "--kv-heads", "2", "--ffn",
                 "128", "--ctx", "256"])
            llm = llama_cpp.Llama(model_path=model, n_ctx=256, verbose=False)
            if llm.n_vocab() != int(vocab_size):
                print(f"FAILED: {name}: llama.cpp sees {llm.n_vocab()} tokens")
                return 1
            cases = texts + (random_bytes(2, 30) if kind == "spm-bpe" else [])
            n_bad = 0
            n = 0
            tokens = 0
            size = 0
            for i, text in enumerate(cases):
                # BOS once in a while: both must add the same one.
                bos = i % 7 == 0
                want = llm.tokenize(text, add_bos=bos, special=False)
                got = nascent_ids(binary, model, text, bos, tmp)
                n += 1
                if i < n_held:
                    tokens += len(want) - bos
                    size += len(text)
                piece = llm.detokenize(want[1:] if bos else want)
                if kind == "spm-bpe":
                    piece = piece[1:]  # The space prefix.
                try:
                    text.decode("utf-8")
                except UnicodeDecodeError:
                    # SentencePiece splits bad bytes by their lead byte,
                    # which may swallow part of a following "▁": only the
                    # ids compare.
                    piece = text
                if got != want or piece != text:
                    n_bad += 1
                    if n_bad <= 5:
                        print(f"  DIFF {name} bos={bos} {text[:60]!r}\n"
                              f"    llama.cpp {want}\n    nascent   {got}\n"
                              f"    llama.cpp pieces {piece[:60]!r}")
            print(f"{name}: {n - n_bad}/{n} tokenizations equal; held-out "
                  f"fortunes {tokens / size:.3f} tokens/byte")
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
