/*
 * commands.h — the subcommands. Each takes the arguments after its name
 * (argv[0] is the subcommand name) and returns the process exit status:
 * 0 success, 1 runtime error (message already printed as "petrel: ..."),
 * 2 usage error.
 */
#ifndef PETREL_COMMANDS_H
#define PETREL_COMMANDS_H

int cmd_run(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_chat(int argc, char **argv);   /* chat --plain: line-oriented chat */
int cmd_bench(int argc, char **argv);  /* llama-bench compatible speed test */
int cmd_imagine(int argc, char **argv); /* text to image, PNG out */
int cmd_show(int argc, char **argv);    /* pictures in the terminal */
int cmd_pull(int argc, char **argv);    /* fetch a model (catalog name, hf://, ms://, URL) */
int cmd_list(int argc, char **argv);    /* the local models */
int cmd_rm(int argc, char **argv);      /* delete a local model */
int cmd_quantize(int argc, char **argv); /* IN OUT TYPE, like llama-quantize */
int cmd_convert(int argc, char **argv);  /* HF folder -> GGUF, like convert_hf_to_gguf.py */
int cmd_export_lora(int argc, char **argv); /* adapters merged into a model copy, like llama-export-lora */
int cmd_perplexity(int argc, char **argv); /* llama-perplexity's PPL and KL divergence */

#endif
