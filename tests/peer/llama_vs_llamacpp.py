#!/usr/bin/env python3
"""Compares nascent's LLaMA inference and quantizer with llama.cpp's (the
peer, through llama-cpp-python) on random-weight models that `nascent
make-model` writes (GQA and MQA, odd sizes, tied output, a synthesised
SentencePiece vocabulary):

1. quantization: `nascent quantize` and llama.cpp's llama_model_quantize on
   the same F16 file give the same type and the same bytes for every tensor
   (q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k_m, q4_k_s, q4_k_m, q5_k_m, q6_k);
2. logits: `nascent generate --tokens ... --dump-logits` and llama.cpp's
   logits for the same file and tokens: close for F32/F16 (relative to the
   logits' spread), same argmax, a small KL divergence and a bounded
   largest difference (relative to the spread) for q8_0, q4_0, q4_k_m
   (files written by llama.cpp's quantizer and by ours);
3. greedy generation (--temp 0) gives the same tokens;
4. tokenization of the synthesised vocabulary matches.

Logits and greedy tokens are checked on every device given (default cpu and
cpu:composed, the CPU with its fused transformer kernels hidden so that
core's composed defaults of rope, attention, swiglu, qembedding and grouped
qmatmul run: what a backend without those kernels computes), against
llama.cpp and against the first device.

Usage: llama_vs_llamacpp.py NASCENT_BINARY [DEVICE,DEVICE...]
Exit status: 0 all match, 1 a difference, 77 skipped (llama-cpp-python
missing; the reason is printed).
"""
import ctypes
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_min import GGUF  # noqa: E402

SKIP = 77
THREADS = "2"
# llama_ftype values of the types compared.
FTYPES = {"q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9, "q2_k": 10,
          "q3_k_m": 12, "q4_k_s": 14, "q4_k_m": 15, "q5_k_m": 17, "q6_k": 18}

# name -> make-model arguments.
MODELS = {
    "gqa-odd": ["--dim", "96", "--layers", "3", "--heads", "6", "--kv-heads",
                "2", "--ffn", "200", "--vocab-size", "333", "--seed", "11"],
    "mqa-tied": ["--dim", "64", "--layers", "2", "--heads", "4", "--kv-heads",
                 "1", "--ffn", "176", "--vocab-size", "301", "--tied",
                 "--rope-base", "500000", "--seed", "12"],
    # Rows of whole k-quant blocks, so q4_k_m is q4_K and q6_K.
    "k256": ["--dim", "256", "--layers", "4", "--heads", "8", "--kv-heads",
             "2", "--ffn", "768", "--vocab-size", "320", "--seed", "13"],
}

# Logits must agree to this fraction of their standard deviation (max over
# all positions and tokens) in float files; llama.cpp rounds activations to
# f16 in F16 matrix products.
FLOAT_TOL = {"f32": 1e-4, "f16": 1e-2}
# Quantized files: both engines quantize activations for the dot products,
# each its own way, so they agree less tightly. The mean KL measured was
# 1.2e-4 to 3.8e-4 (issue 28; the limit was 1e-2, which a kernel off by a
# block's worth could pass): about 5x the largest now. The largest logit
# difference, as a fraction of the logits' std, was not recorded when these
# limits were set (the peer's install takes an hour and was not rerun), so
# its bound is conservative: the CPU and CUDA backends, which round
# activations differently, were measured 0.07-0.12 std apart on these files
# (bench/NOTES.md), and a kernel that drops a block moves them by ~1 std.
QUANT_MIN_ARGMAX = 0.9
# Argmax agreement counts the positions whose top two logits (llama.cpp's)
# are more than this fraction of the logits' std apart: the random models
# have near ties that 8-bit activations break either way. On an AVX2
# machine llama.cpp's repacked q4_0 kernels flipped 3 of 24 positions of
# k256's file, each within 0.001 std of a tie (session 10), which an
# agreement over all positions counted as a fault.
NEAR_TIE = 0.05
QUANT_MAX_KL = 2e-3
QUANT_MAX_DIFF = 0.5
# Greedy generation on quantized files: near-ties of random models make the
# sequences part at some step, so each of nascent's choices is checked on
# llama.cpp's logits for nascent's sequence (teacher forcing): it must be
# llama.cpp's argmax in most steps and within this fraction of the logits'
# std of llama.cpp's best logit in every step.
QUANT_GREEDY_MIN_AGREE = 0.75
QUANT_GREEDY_MAX_GAP = 0.3
# Devices against the first one. Float files: the same weights, only the
# order of float operations differs, so the logits agree closely and greedy
# generation is the same. Quantized files: activations are rounded to 8 bits
# for the integer dot products, and a last-bit difference upstream (RoPE's
# angles, the attention sums) moves some of them by a whole step, so the
# devices agree within these bounds (measured: the composed attention alone
# moved a q4_0 file's logits by 2e-2 std, 1e-7 in f32), near-tied argmaxes
# may part, and each device's greedy tokens are checked on llama.cpp's
# logits above.
DEVICE_TOL = 1e-4
DEVICE_QUANT_MAX_DIFF = 0.2
DEVICE_QUANT_MAX_KL = 1e-3


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(SKIP)


class Failures:
    def __init__(self):
        self.n = 0

    def check(self, ok, what):
        if not ok:
            self.n += 1
            print(f"  FAILED: {what}")
        return ok


def run(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({r.returncode}):\n"
                           f"{r.stdout}\n{r.stderr}")
    return r.stdout


def llama_quantize(llama_cpp, src, dst, ftype):
    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype = ftype
    p.nthread = int(THREADS)
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(),
                                        ctypes.byref(p))
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize({src}, {ftype}) gave {rc}")


def compare_quantized(ref, ours, fail, label):
    a, b = GGUF(ref), GGUF(ours)
    fail.check(set(a.tensors) == set(b.tensors), f"{label}: tensor names")
    same = 0
    for name, (t, ne, _, _) in a.tensors.items():
        tb, neb = b.tensors[name][0], b.tensors[name][1]
        if not fail.check(t == tb and ne == neb,
                          f"{label}: {name} is {t}{list(ne)} in llama.cpp's "
                          f"file, {tb}{list(neb)} in ours"):
            continue
        if fail.check(a.tensor_bytes(name) == b.tensor_bytes(name),
                      f"{label}: {name} ({t}) bytes differ"):
            same += 1
    for key in ("general.file_type", "general.quantization_version"):
        fail.check(a.kv.get(key) == b.kv.get(key),
                   f"{label}: {key} {a.kv.get(key)} vs {b.kv.get(key)}")
    types = sorted({t for t, _, _, _ in a.tensors.values()})
    print(f"  {label}: {same}/{len(a.tensors)} tensors byte-identical "
          f"(types {', '.join(types)})")


def llama_logits(llama_cpp, np, path, tokens, float_kv):
    kw = {"type_k": 0, "type_v": 0} if float_kv else {}
    llm = llama_cpp.Llama(model_path=path, n_ctx=128, n_batch=128,
                          logits_all=True, n_threads=int(THREADS), seed=1,
                          verbose=False, **kw)
    llm.eval(tokens)
    logits = np.array(llm.scores[:len(tokens)], dtype=np.float64)
    return llm, logits


def llama_greedy(llm, np, tokens, n):
    llm.reset()
    llm.eval(tokens)
    out = []
    for _ in range(n):
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        out.append(tok)
        llm.eval([tok])
    return out


def nascent_logits(np, binary, path, tokens, n_gen, tmp, device):
    dump = os.path.join(tmp, "logits.bin")
    out = run([binary, "generate", "-m", path, "--tokens",
               ",".join(map(str, tokens)), "-n", str(n_gen), "--temp", "0",
               "--ignore-eos", "--print-ids", "--dump-logits", dump,
               "-t", THREADS, "-c", "128", "-d", device])
    logits = np.fromfile(dump, dtype="<f4").astype(np.float64)
    ids_line = [l for l in out.strip().splitlines() if l.startswith("[")][-1]
    ids = [int(x) for x in ids_line.strip("[]").split(",") if x.strip()]
    return logits.reshape(len(tokens), -1), ids


def log_softmax(np, x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def compare_logits(np, want, got, kind, fail, label):
    if not fail.check(want.shape == got.shape,
                      f"{label}: logits {got.shape}, want {want.shape}"):
        return
    scale = want.std()
    err = np.abs(want - got).max() / scale
    agree = float((want.argmax(-1) == got.argmax(-1)).mean())
    top2 = np.sort(want, axis=-1)[:, -2:]
    decided = (top2[:, 1] - top2[:, 0]) > NEAR_TIE * scale
    agree_decided = float(
        (want.argmax(-1) == got.argmax(-1))[decided].mean()) if decided.any() \
        else 1.0
    lp, lq = log_softmax(np, want), log_softmax(np, got)
    kl = float((np.exp(lp) * (lp - lq)).sum(-1).mean())
    print(f"  {label}: max |diff| {err:.2e} of the logits' std {scale:.2f}, "
          f"argmax agreement {agree:.3f} ({agree_decided:.3f} of the "
          f"{int(decided.sum())} positions without a near tie), mean KL "
          f"{kl:.2e}")
    if kind in FLOAT_TOL:
        fail.check(err <= FLOAT_TOL[kind],
                   f"{label}: max |diff| {err:.2e} > {FLOAT_TOL[kind]:.0e}")
        fail.check(agree == 1.0, f"{label}: argmax differs")
    else:
        fail.check(agree_decided >= QUANT_MIN_ARGMAX,
                   f"{label}: argmax agreement {agree_decided:.3f} < "
                   f"{QUANT_MIN_ARGMAX} away from near ties")
        fail.check(kl <= QUANT_MAX_KL,
                   f"{label}: mean KL {kl:.2e} > {QUANT_MAX_KL}")
        fail.check(err <= QUANT_MAX_DIFF,
                   f"{label}: max |diff| {err:.2e} of the logits' std > "
                   f"{QUANT_MAX_DIFF}")


def check_forced_greedy(llm, np, tokens, ids, fail, label):
    """nascent's greedy ids against llama.cpp's logits along them."""
    llm.reset()
    llm.eval(tokens + ids[:-1])
    logits = np.array(llm.scores[len(tokens) - 1:len(tokens) - 1 + len(ids)],
                      dtype=np.float64)
    best = logits.max(-1)
    chosen = logits[np.arange(len(ids)), ids]
    gap = float(((best - chosen) / logits.std()).max())
    agree = float((logits.argmax(-1) == np.array(ids)).mean())
    print(f"  {label}: nascent's greedy tokens are llama.cpp's argmax in "
          f"{agree:.3f} of the steps, at most {gap:.3f} std below its best")
    fail.check(agree >= QUANT_GREEDY_MIN_AGREE,
               f"{label}: greedy agreement {agree:.3f} < "
               f"{QUANT_GREEDY_MIN_AGREE}")
    fail.check(gap <= QUANT_GREEDY_MAX_GAP,
               f"{label}: a greedy token {gap:.3f} std below llama.cpp's "
               f"best > {QUANT_GREEDY_MAX_GAP}")


def common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def compare_tokenizer(llm, binary, path, tmp, fail, label):
    rng = random.Random(5)
    pool = list("etaoinshrdlu ETAON.,!?'0123\n") + ["\u00e9", "\u4e2d",
                                                      "  ", "<s>"]
    texts = ["hello world the rain", " leading", "caf\u00e9 na\u00efve",
             "new\nline"]
    texts += ["".join(rng.choice(pool) for _ in range(rng.randint(1, 30)))
              for _ in range(20)]
    bad = 0
    for text in texts:
        f = os.path.join(tmp, "text.txt")
        with open(f, "wb") as fh:
            fh.write(text.encode())
        out = run([binary, "tokenize", "-m", path, "-f", f, "--ids",
                   "--no-bos", "--no-escape", "--no-parse-special"])
        got = [int(x) for x in
               out.strip().splitlines()[-1].strip("[]").split(",")
               if x.strip()]
        want = llm.tokenize(text.encode(), add_bos=False, special=False)
        bad += got != want
        if got != want and bad <= 3:
            print(f"    {text!r}: llama.cpp {want}, nascent {got}")
    fail.check(bad == 0, f"{label}: {bad}/{len(texts)} tokenizations differ")
    print(f"  {label}: {len(texts) - bad}/{len(texts)} tokenizations equal")


def compare_devices(np, first, got, first_ids, ids, quantized, fail, label):
    err = np.abs(first - got).max() / first.std()
    agree = float((first.argmax(-1) == got.argmax(-1)).mean())
    lp, lq = log_softmax(np, first), log_softmax(np, got)
    kl = float((np.exp(lp) * (lp - lq)).sum(-1).mean())
    print(f"  {label}: against the first device: max |diff| {err:.2e} of the "
          f"logits' std, argmax agreement {agree:.3f}, mean KL {kl:.2e}, "
          f"greedy {common_prefix(first_ids, ids)}/{len(ids)} tokens equal")
    if quantized:
        fail.check(err <= DEVICE_QUANT_MAX_DIFF and kl <= DEVICE_QUANT_MAX_KL,
                   f"{label}: against the first device beyond "
                   f"{DEVICE_QUANT_MAX_DIFF} std or KL {DEVICE_QUANT_MAX_KL}")
        return
    fail.check(err <= DEVICE_TOL,
               f"{label}: max |diff| {err:.2e} > {DEVICE_TOL:.0e} against "
               "the first device")
    fail.check(ids == first_ids, f"{label}: greedy tokens differ from the "
               f"first device's: {first_ids} vs {ids}")


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    binary = sys.argv[1]
    devices = (sys.argv[2] if len(sys.argv) == 3 else "cpu,cpu:composed")
    devices = devices.split(",")
    try:
        import llama_cpp
        import numpy as np
    except ImportError:
        skip(f"llama-cpp-python is not installed for {sys.executable} "
             "(bash scripts/setup_peer.sh installs it into build/venv)")
    if not os.access(binary, os.X_OK):
        print(f"FAILED: {binary} is not an executable")
        return 1
    print(f"peer: llama-cpp-python {llama_cpp.__version__}")
    # llama.cpp's log (every tensor it quantizes) would bury the results.
    quiet = llama_cpp.llama_log_callback(lambda level, text, data: None)
    llama_cpp.llama_log_set(quiet, ctypes.c_void_p(0))
    fail = Failures()
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for name, args in MODELS.items():
            for t in ("f32", "f16"):
                path = os.path.join(tmp, f"{name}-{t}.gguf")
                run([binary, "make-model", path, "--type", t, "-t", THREADS]
                    + args)
                files[(name, t)] = path

        print("quantization (llama.cpp's llama_model_quantize vs nascent "
              "quantize, from F16):")
        src = files[("k256", "f16")]
        for q, ftype in FTYPES.items():
            ref = os.path.join(tmp, f"k256-{q}-llamacpp.gguf")
            ours = os.path.join(tmp, f"k256-{q}-nascent.gguf")
            llama_quantize(llama_cpp, src, ref, ftype)
            run([binary, "quantize", "-q", "-t", THREADS, src, ours, q])
            compare_quantized(ref, ours, fail, f"k256 {q}")
            if q in ("q8_0", "q4_0", "q4_k_m"):
                files[("k256", f"{q} llama.cpp")] = ref
                files[("k256", f"{q} nascent")] = ours
            else:
                os.remove(ref)
                os.remove(ours)
        # Odd sizes: q4_k_m falls back to q5_0 / q8_0 the same way.
        src = files[("gqa-odd", "f32")]
        ref = os.path.join(tmp, "gqa-odd-q4_k_m-llamacpp.gguf")
        ours = os.path.join(tmp, "gqa-odd-q4_k_m-nascent.gguf")
        llama_quantize(llama_cpp, src, ref, FTYPES["q4_k_m"])
        run([binary, "quantize", "-q", "-t", THREADS, src, ours, "q4_k_m"])
        compare_quantized(ref, ours, fail, "gqa-odd q4_k_m (fallbacks)")
        files[("gqa-odd", "q4_k_m nascent")] = ours

        print("logits and greedy generation (llama.cpp vs nascent):")
        rng = random.Random(3)
        checked_tokenizer = set()
        for (name, kind), path in files.items():
            n_vocab = GGUF(path).kv["llama.vocab_size"]
            tokens = [1] + [rng.randrange(3, n_vocab) for _ in range(23)]
            float_kind = kind if kind in FLOAT_TOL else None
            llm, want = llama_logits(llama_cpp, np, path, tokens,
                                     float_kind is not None)
            first = None
            for device in devices:
                label = f"{name} {kind} on {device}"
                try:
                    got, ids = nascent_logits(np, binary, path, tokens, 16,
                                              tmp, device)
                except RuntimeError as e:
                    fail.check(False, f"{label}: {e}")
                    continue
                compare_logits(np, want, got, float_kind or "quant", fail,
                               label)
                greedy = llama_greedy(llm, np, tokens, 16)
                same = common_prefix(greedy, ids)
                print(f"  {label}: greedy: {same}/16 tokens equal")
                if float_kind:
                    fail.check(greedy == ids, f"{label}: greedy tokens "
                               f"differ: llama.cpp {greedy}, nascent {ids}")
                else:
                    check_forced_greedy(llm, np, tokens, ids, fail, label)
                if first is None:
                    first = (got, ids)
                else:
                    compare_devices(np, first[0], got, first[1], ids,
                                    float_kind is None, fail, label)
            if name not in checked_tokenizer:
                checked_tokenizer.add(name)
                compare_tokenizer(llm, binary, path, tmp, fail,
                                  f"{name} vocabulary")
            del llm
    if fail.n:
        print(f"FAILED: {fail.n} differences")
        return 1
    print("nascent matches llama.cpp")
    return 0


if __name__ == "__main__":
    sys.exit(main())
