#!/usr/bin/env python3
"""gen_spm_vocab.py — a tiny SentencePiece BPE vocabulary for the "llama"
tokenizer tests (no real llama-type GGUF is reachable offline).

Writes
  tests/data/spm_tiny.model   the SentencePiece model (the reference: its
                              own encoder gives the expected ids, see
                              tools/gen_tokenizer_fixture.py)
  tests/data/spm_tiny.gguf    the same vocabulary as GGUF metadata only
                              (general.architecture = "llama", tokenizer.ggml.*,
                              no tensors), which is all pt_tokenizer_load reads

Training: model_type=bpe, vocab_size=1000, byte_fallback=True, identity
normalisation and no whitespace squeezing (so the library's encoder does
exactly what a GGUF can describe: Llama's own tokenizer.model is set up the
same way), dummy prefix on, one thread (deterministic). The training text is the
test corpus (tests/data/tokenizer_corpus.txt) plus the Zen of Python and a
seeded shuffle of the corpus words, so it is fully determined by committed
files. Characters below the coverage cut fall back to <0xXX> byte pieces,
which the tests then exercise.

Afterwards two frequent merged pieces are re-typed UNUSED in the model proto
(SentencePiece then splits them back when they come out of a merge), so the
tests cover that path of the algorithm too.

Needs sentencepiece, gguf and protobuf (pip install protobuf: the model
proto is edited through sentencepiece_model_pb2).

Run from the repository root:  python3 tools/gen_spm_vocab.py
(then python3 tools/gen_tokenizer_fixture.py to refresh the reference ids).
"""

import codecs
import contextlib
import io
import os
import random
import sys

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_tokenizer_fixture import read_corpus  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
SEED = 1234
VOCAB_SIZE = 1000
N_UNUSED = 2


def training_sentences():
    with contextlib.redirect_stdout(io.StringIO()):
        import this  # the Zen of Python, printed on import; the text is this.s in rot13

    corpus = read_corpus(os.path.join(DATA, "tokenizer_corpus.txt"))
    zen = codecs.decode(this.s, "rot13").split("\n")
    rng = random.Random(SEED)
    words = [w for line in corpus for w in line.split(" ") if w]
    shuffled = []
    for _ in range(3000):
        shuffled.append(" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))))
    # The trainer reads sentences; it needs no newlines inside them.
    out = [s.replace("\n", " ") for s in corpus + zen + shuffled]
    return [s for s in out if s.strip()]


def train():
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_sentences()),
        model_writer=model,
        model_type="bpe",
        vocab_size=VOCAB_SIZE,
        byte_fallback=True,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=True,
        split_digits=True,
        character_coverage=0.995,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        num_threads=1,
        input_sentence_size=0,  # use every sentence: BPE training then draws no random numbers
        minloglevel=2,
    )
    proto = sp_pb2.ModelProto()
    proto.ParseFromString(model.getvalue())
    # Re-type as UNUSED the first N_UNUSED merged pieces (two or more
    # characters, not starting with the space mark) in score order.
    n = 0
    for p in proto.pieces:
        if n < N_UNUSED and p.type == sp_pb2.ModelProto.SentencePiece.NORMAL and len(p.piece) >= 2 \
                and not p.piece.startswith("\u2581"):
            p.type = sp_pb2.ModelProto.SentencePiece.UNUSED
            n += 1
    return proto


def write_gguf(proto, path):
    import gguf

    tokens = [p.piece.encode("utf-8") for p in proto.pieces]
    scores = [p.score for p in proto.pieces]
    # sentencepiece_model.proto numbers the piece types exactly as GGUF's
    # tokenizer.ggml.token_type does (NORMAL 1 .. BYTE 6).
    types = [int(p.type) for p in proto.pieces]
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("spm-tiny")
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    proto = train()
    with open(os.path.join(DATA, "spm_tiny.model"), "wb") as f:
        f.write(proto.SerializeToString())
    write_gguf(proto, os.path.join(DATA, "spm_tiny.gguf"))
    unused = [p.piece for p in proto.pieces if p.type == sp_pb2.ModelProto.SentencePiece.UNUSED]
    print(f"spm_tiny: {len(proto.pieces)} pieces, unused {unused}")


if __name__ == "__main__":
    main()
