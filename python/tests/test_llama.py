"""nascent.llama on a small random model that `nascent make-model` writes:
the streamed text is what `nascent generate` prints for the same prompt and
sampling, and leaving the loop early stops the generation."""
import subprocess

import numpy as np

import nascent

SAMPLING = dict(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=1)


def test_generate_streams_what_the_cli_prints(cli, tiny_model):
    model = nascent.llama.load(tiny_model)
    assert model.config["n_layer"] == 2 and model.device == nascent.cpu()
    pieces = list(model.generate("Once upon a time", max_tokens=24, **SAMPLING))
    assert len(pieces) > 1
    cli_out = subprocess.run(
        [cli, "generate", "-m", tiny_model, "-p", "Once upon a time", "-n", "24",
         "--temp", "0.8", "--top-k", "40", "--top-p", "0.95", "--min-p", "0.05",
         "--seed", "1"], check=True, capture_output=True).stdout.decode()
    assert "".join(pieces) + "\n" == cli_out


def test_stopping_early_and_logits(tiny_model):
    model = nascent.llama.load(tiny_model)
    stream = model.generate("Hello", max_tokens=64, **SAMPLING)
    first = next(stream)
    stream.close()  # the worker stops and joins
    assert isinstance(first, str)
    ids = model.tokenize("Hello world")
    assert "Hello world" in model.detokenize(ids)
    logits = model.logits(ids)
    assert logits.shape[-1] == model.config["n_vocab"]
    all_logits = model.logits(ids, all=True)
    np.testing.assert_allclose(np.asarray(all_logits)[-1], np.asarray(logits).reshape(-1),
                               rtol=1e-4, atol=1e-4)
