"""bpe_alphabet.py — GPT-2's byte-level BPE alphabet, for the scripts that
write vocabularies of their own (gen_tiny_models.py, gen_bench_models.py)."""


def bytes_to_unicode():
    """GPT-2's byte -> printable character table: the printable Latin-1
    bytes map to themselves, every other byte to a character from U+0100 up
    in byte order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(printable, chars)}
