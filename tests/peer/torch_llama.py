"""nascent's LLaMA (llama.cpp's architecture) in PyTorch, written from the
architecture's definition for the comparisons of tests/peer and bench/:
RMSNorm, RoPE on adjacent pairs (ggml's normal mode, which llama.cpp uses
for the llama architecture), grouped-query causal attention, SwiGLU, an
untied output. Weights are a dict of GGUF tensor names to tensors in
PyTorch's [out, in] layout, as nascent's checkpoints store them.
"""
import torch


def rms_norm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rope(x, base):
    # x [B, T, H, D]: pairs (2i, 2i + 1) rotated by pos * base^(-2i / D).
    b, t, h, d = x.shape
    pos = torch.arange(t, dtype=torch.float64, device=x.device)[:, None]
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64,
                                 device=x.device) / d)
    ang = pos * inv[None, :]
    cos = torch.cos(ang).to(x.dtype)[None, :, None, :]
    sin = torch.sin(ang).to(x.dtype)[None, :, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = x0 * cos - x1 * sin
    out[..., 1::2] = x0 * sin + x1 * cos
    return out


def llama_loss(w, ids, cfg, fast=False):
    """Mean cross-entropy of ids[:, 1:] given ids[:, :-1]; cfg is (n_head,
    n_head_kv, rms_eps, rope_base). `fast` takes PyTorch's fused attention
    (scaled_dot_product_attention) where this PyTorch has it."""
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    sdpa = sdpa if fast else None
    n_head, n_kv, eps, base = cfg
    inp, tgt = ids[:, :-1], ids[:, 1:]
    x = w["token_embd.weight"][inp]
    b, t, dim = x.shape
    hd = dim // n_head
    mask = torch.full((t, t), float("-inf"), dtype=x.dtype,
                      device=x.device).triu(1)
    layer = 0
    while f"blk.{layer}.attn_q.weight" in w:
        p = lambda n: w[f"blk.{layer}.{n}.weight"]  # noqa: E731
        h = rms_norm(x, p("attn_norm"), eps)
        q = rope((h @ p("attn_q").T).view(b, t, n_head, hd), base)
        k = rope((h @ p("attn_k").T).view(b, t, n_kv, hd), base)
        v = (h @ p("attn_v").T).view(b, t, n_kv, hd)
        rep = n_head // n_kv
        k = k.repeat_interleave(rep, dim=2)
        v = v.repeat_interleave(rep, dim=2)
        if sdpa is not None:
            a = sdpa(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                     is_causal=True).transpose(1, 2)
        else:
            s = torch.einsum("bqhd,bkhd->bhqk", q, k) / hd ** 0.5 + mask
            a = torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), v)
        x = x + a.reshape(b, t, dim) @ p("attn_output").T
        h = rms_norm(x, p("ffn_norm"), eps)
        g = torch.nn.functional.silu(h @ p("ffn_gate").T) * (h @ p("ffn_up").T)
        x = x + g @ p("ffn_down").T
        layer += 1
    logits = rms_norm(x, w["output_norm.weight"], eps) @ w["output.weight"].T
    return torch.nn.functional.cross_entropy(
        logits.reshape(b * t, -1), tgt.reshape(-1))
