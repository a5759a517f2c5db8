/*
 * clip_tokenizer.h — the CLIP BPE tokenizer of Stable Diffusion's text
 * encoders, equal to transformers' slow CLIPTokenizer without ftfy (the
 * one diffusers pipelines run): prompt cleanup (clip_text.h), the regex
 *   <|startoftext|>|<|endoftext|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
 * (case-insensitive), GPT-2's byte alphabet, BPE with "</w>" word ends by
 * merges.txt rank, then <|startoftext|> ids... <|endoftext|> padded.
 * Internal to the engine.
 *
 * Files (as in a diffusers tokenizer/ folder):
 *   vocab.json  a JSON object {"token": id, ...}; ids 0..INT32_MAX; a
 *               repeated key keeps its last id (Python's json.load);
 *               must hold "<|startoftext|>" and "<|endoftext|>" (also
 *               the unknown token, as in transformers);
 *   merges.txt  a first line that is always skipped ("#version: 0.2"),
 *               then "left right" per line, rank = line index - 1; only
 *               the first 48894 merge lines count (transformers reads
 *               [1 : 49152 - 256 - 2 + 1]); a repeated pair keeps its last
 *               rank; lines of other than two fields never match.
 * One tokenizer is read-only after sd_clip_tokenizer_new and may encode on
 * several threads at once.
 */
#ifndef PETREL_CLIP_TOKENIZER_H
#define PETREL_CLIP_TOKENIZER_H

#include "petrel.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sd_clip_tokenizer sd_clip_tokenizer;

/* Which transformers CLIPTokenizer to equal. They differ only in the text
 * cleanup (clip_text.h): the slow one (transformers 4.x, without ftfy)
 * removes control/format characters, spaces out CJK ideographs and applies
 * Python's final-sigma rule; transformers 5's (tokenizers-backed) does
 * none of that. Plain prompts give the same ids in both. The reference
 * fixture (tests/data/sd-tiny) comes from transformers 5. */
typedef enum sd_clip_flavour {
    SD_CLIP_TRANSFORMERS5 = 0,
    SD_CLIP_SLOW_NO_FTFY,
} sd_clip_flavour;

/* Parse vocab.json (vocab_len bytes) and merges.txt (merges_len bytes);
 * neither needs a NUL. A malformed file is a PT_ERR_FORMAT naming it. */
pt_status sd_clip_tokenizer_new(const char *vocab_json, size_t vocab_len, const char *merges,
                                size_t merges_len, sd_clip_flavour flavour, sd_clip_tokenizer **out,
                                pt_error *err);
void sd_clip_tokenizer_free(sd_clip_tokenizer *tok);

/* ids of <|startoftext|> and <|endoftext|>; the vocabulary size (largest
 * id + 1). */
int32_t sd_clip_bos(const sd_clip_tokenizer *tok);
int32_t sd_clip_eos(const sd_clip_tokenizer *tok);
int32_t sd_clip_vocab_size(const sd_clip_tokenizer *tok);

/* Tokenize text[0..text_len) (UTF-8; ill-formed bytes are dropped) as
 * tokenizer(text, padding="max_length", max_length=max_len,
 * truncation=True).input_ids:
 *   ids[0] = BOS, then at most max_len - 2 text tokens (the rest are cut),
 *   then EOS, then pad_id up to ids[max_len - 1]
 * (pad_id: EOS for SD 1.x, 0 for SD 2.x). As in transformers, the exact
 * strings "<|startoftext|>" and "<|endoftext|>" in the text, and the pad
 * token's own string (SD 2.x: "!", id 0), are split out of the raw text
 * first and become those tokens. *n_real gets the count before the padding (BOS and EOS
 * included, 2 .. max_len). max_len < 2 is a PT_ERR_ARG; running
 * out of memory PT_ERR_NOMEM. */
pt_status sd_clip_tokenize(const sd_clip_tokenizer *tok, const char *text, size_t text_len,
                           int32_t *ids, int max_len, int32_t pad_id, int *n_real, pt_error *err);

#endif
