#!/usr/bin/env python3
"""A model trained by `nascent train-lm` and exported by `nascent export`,
run in llama.cpp (the peer, through llama-cpp-python), for both tokenizers
nascent trains (SentencePiece-style BPE and byte-level BPE):

1. llama.cpp tokenizes the held-out text exactly as nascent does;
2. greedy generation gives the same tokens from a few prompts (F16), or
   tokens llama.cpp's logits agree with (Q8_0, where 8-bit activations may
   break a near tie the other way);
3. llama.cpp's perplexity on the held-out text, computed with
   llama-perplexity's recipe from its logits, equals what `nascent
   perplexity` prints within 1%.

Usage: train_lm_vs_llamacpp.py NASCENT_BINARY
Exit status: 0 all match, 1 a difference, 77 skipped (llama-cpp-python
missing; the reason is printed).
"""
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The greedy loop and the teacher-forced check of quantized files (Q8_0:
# both engines round activations to 8 bits, each its own way, so a near
# tie may go the other way) are those of the random-model comparison.
from llama_vs_llamacpp import (  # noqa: E402
    Failures, check_forced_greedy, llama_greedy)

SKIP = 77
THREADS = "2"
N_CTX = 64
PPL_TOL = 0.01
PROMPTS = ["The cat", "A small house", "My friend likes"]
N_GEN = 24


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(SKIP)


def run(args):
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}):\n"
                           f"{r.stdout}\n{r.stderr}")
    return r.stdout


def corpus(path, seed=11):
    rng = random.Random(seed)
    subjects = ["the cat", "a dog", "my friend", "the old man", "a bird",
                "the teacher", "our neighbour", "the little girl", "we"]
    verbs = ["sees", "likes", "finds", "wants", "remembers", "paints",
             "walks to", "sings about"]
    objects = ["the sea", "a red apple", "the green hill", "a small house",
               "the morning sun", "an old book", "the caf\u00e9", "na\u00efve "
               "ideas"]
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(500):
            parts = []
            for _ in range(rng.randint(1, 3)):
                s = (f"{rng.choice(subjects)} {rng.choice(verbs)} "
                     f"{rng.choice(objects)}{rng.choice(['.', '!', '?'])}")
                parts.append(s[0].upper() + s[1:])
            f.write(" ".join(parts) + "\n%\n")


def nascent_greedy(binary, model, prompt):
    out = run([binary, "generate", "-m", model, "-p", prompt, "-n",
               str(N_GEN), "--temp", "0", "--ignore-eos", "--print-ids",
               "-t", THREADS])
    line = [l for l in out.strip().splitlines() if l.startswith("[")][-1]
    return [int(x) for x in line.strip("[]").split(",") if x.strip()]


def llama_perplexity(llm, np, text):
    """llama-perplexity's recipe (tools/perplexity/perplexity.cpp)."""
    tokens = llm.tokenize(text.encode(), add_bos=True, special=False)
    n_chunk = len(tokens) // N_CTX
    first = N_CTX // 2
    nll, count = 0.0, 0
    for i in range(n_chunk):
        chunk = list(tokens[i * N_CTX:(i + 1) * N_CTX])
        chunk[0] = llm.token_bos()
        llm.reset()
        llm.eval(chunk)
        logits = np.array(llm.scores[:N_CTX], dtype=np.float64)
        for j in range(first, N_CTX - 1):
            row = logits[j]
            m = row.max()
            lse = m + np.log(np.exp(row - m).sum())
            nll += lse - row[tokens[i * N_CTX + j + 1]]
            count += 1
    return float(np.exp(nll / count)), tokens


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    try:
        import llama_cpp
        import numpy as np
    except ImportError:
        skip(f"llama-cpp-python is not installed for {sys.executable} "
             "(bash scripts/setup_peer.sh installs it into build/venv)")
    print(f"peer: llama-cpp-python {llama_cpp.__version__}")
    fail = Failures()
    check = fail.check

    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "corpus.txt")
        corpus(text)
        for kind in ("spm-bpe", "byte-bpe"):
            ckpt = os.path.join(tmp, f"{kind}.safetensors")
            run([binary, "train-lm", "--corpus", text, "--tokenizer", kind,
                 "--vocab-size", "384", "--dim", "64", "--layers", "2",
                 "--heads", "4", "--kv-heads", "2", "--ffn", "128", "--seq",
                 str(N_CTX), "--batch", "8", "--steps", "60", "--lr", "3e-3",
                 "--eval-every", "0", "--samples", "0", "-t", THREADS, "-o",
                 ckpt])
            heldout = os.path.join(tmp, f"{kind}.heldout.txt")
            held_text = open(heldout, encoding="utf-8").read()
            for ftype in ("f16", "q8_0"):
                label = f"{kind} {ftype}"
                model = os.path.join(tmp, f"{kind}-{ftype}.gguf")
                run([binary, "export", ckpt, model, "--type", ftype])
                llm = llama_cpp.Llama(model_path=model, n_ctx=N_CTX,
                                      n_batch=N_CTX, logits_all=True,
                                      n_threads=int(THREADS), seed=1,
                                      verbose=False)
                # 1. Tokenization of the held-out text.
                out = run([binary, "tokenize", "-m", model, "-f", heldout,
                           "--ids", "--no-parse-special", "--no-escape"])
                ours = [int(x) for x in
                        out.strip().splitlines()[-1].strip("[]").split(",")
                        if x.strip()]
                ppl_want, theirs = llama_perplexity(llm, np, held_text)
                check(ours == list(theirs),
                      f"{label}: tokenization of the held-out text "
                      f"({len(ours)} vs {len(theirs)} tokens)")
                # 2. Greedy generation.
                same = 0
                for prompt in PROMPTS:
                    prompt_ids = llm.tokenize(prompt.encode(), add_bos=True,
                                              special=False)
                    want = llama_greedy(llm, np, prompt_ids, N_GEN)
                    got = nascent_greedy(binary, model, prompt)
                    if got == want:
                        same += 1
                    elif ftype == "f16":
                        check(False, f"{label}: greedy from {prompt!r}: "
                              f"nascent {got}, llama.cpp {want}")
                    else:
                        check_forced_greedy(llm, np, prompt_ids, got, fail,
                                            f"{label} from {prompt!r}")
                # 3. Perplexity.
                out = run([binary, "perplexity", "-m", model, "-f", heldout,
                           "-c", str(N_CTX), "-t", THREADS])
                m = re.search(r"Final estimate: PPL = ([0-9.]+)", out)
                ppl = float(m.group(1)) if m else float("nan")
                rel = abs(ppl - ppl_want) / ppl_want
                print(f"  {label}: {len(ours)} held-out tokens; greedy equal "
                      f"from {same}/{len(PROMPTS)} prompts; perplexity "
                      f"nascent {ppl:.4f}, llama.cpp {ppl_want:.4f} "
                      f"(rel {rel:.1e})")
                check(rel <= PPL_TOL, f"{label}: perplexity differs by "
                      f"{rel:.1e} > {PPL_TOL}")
                del llm
    print(f"{fail.n} failure(s)")
    return 1 if fail.n else 0


sys.exit(main())
