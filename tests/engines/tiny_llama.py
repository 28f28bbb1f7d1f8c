"""Make a tiny Llama for tests against real engines (vLLM, SGLang on CPU): nothing downloaded.

Run with an engine venv's python, which has torch, transformers and tokenizers:

    .engines/vllm/bin/python tests/engines/tiny_llama.py OUTDIR

OUTDIR then holds a Hugging Face model folder: a Llama with 2 layers, hidden size 128 and
4 heads (head size 32, which CPU attention kernels support), random bfloat16 weights (about
0.8 M parameters), and a byte-level BPE tokenizer of 2,000 tokens trained here on generated
text, with a chat template. The same command writes the same files every time (seeded), in
about ten seconds. Random weights write random tokens, fast: that is all a speed test needs.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

VOCAB_SIZE = 2000
HIDDEN, LAYERS, HEADS, INTERMEDIATE = 128, 2, 4, 256
MAX_POSITIONS = 8192
SEED = 0
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}{{ eos_token }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SYLLABLES = ["ka", "lo", "mi", "ren", "tas", "vo", "qui", "der", "ph", "sen", "tra", "ul", "bex", "no", "ith"]


def training_text(lines: int = 4000) -> list[str]:
    """Seeded pseudo-English: words from syllables, digits and punctuation, so merges cover all of them."""
    rng = random.Random(SEED)
    text = []
    for _ in range(lines):
        words = ["".join(rng.choices(SYLLABLES, k=rng.randint(1, 4))) for _ in range(rng.randint(4, 16))]
        if rng.random() < 0.3:
            words.append(str(rng.randint(0, 99999)))
        text.append(" ".join(words).capitalize() + rng.choice([".", ",", "?", "!", ":"]))
    return text


def make_tokenizer(out: Path) -> object:
    """Train the byte-level BPE tokenizer and save it with save_pretrained; returns it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    core.train_from_iterator(training_text(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<s>", eos_token="</s>",
                                        model_max_length=MAX_POSITIONS)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)
    return tokenizer


def make_model(out: Path, tokenizer: object) -> None:
    """Write a randomly initialised bfloat16 Llama beside the tokenizer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=HIDDEN, intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=HEADS,
        max_position_embeddings=MAX_POSITIONS, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=False, torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)


def main(argv: list[str]) -> int:
    """Make the model in the folder named on the command line."""
    if len(argv) != 2:
        print("usage: PYTHON tests/engines/tiny_llama.py OUTDIR", file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    make_model(out, make_tokenizer(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
