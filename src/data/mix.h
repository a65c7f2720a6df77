// data/mix.h — the --mix spec: the sources the training data mixes, and each one's share.
//
// SPEC is a comma-separated list of SOURCE[=W]. SOURCE is `train` (the prepared data folder's own
// training shards: the default corpus unless --data says otherwise), the name of a folder of the
// data root's text/ (extra_books, extra_wiki, extra_textbooks, ...; not val, which is held out),
// or a path (it holds a '/' or starts with '.') to a folder or file of .jsonl/.txt documents. W is
// the source's share of the training tokens, in (0, 1]. The weights are either
//   - given for no source: natural shares, each source in proportion to its tokens (as if the
//     sources were concatenated);
//   - given for every source: they add up to 1 (within MIX_SUM_TOLERANCE);
//   - given for every source but train: train gets the remainder, 1 - the others' sum, which must
//     be above MIX_SUM_TOLERANCE.
// train is in every mixture, with the remainder (or its natural share) when it is not listed; only
// an explicit train=0 leaves it out. Anything else (an empty item, a source listed twice, a weight
// that is not a number in range, an unknown folder, weights adding up past 1) is a usage error
// that quotes the offending part of the spec and says how to fix it.
//
// The sources come out train first (unless train=0), then the others in the order written: the
// loader's source 0 is then train, whose document order is the one of a run without --mix.
#pragma once
#include <stddef.h>

#include "data/prepare.h"

#define MIX_MAX_SOURCES 16
// The spec that asks the planner to choose the mixture (planner/session.h); training refuses it.
#define MIX_AUTO "auto"
#define MIX_SUM_TOLERANCE 1e-6

typedef struct {
    char name[256];    // "train", a folder name of DATA_ROOT/text/, or a path, as written
    char path[1024];   // the documents to prepare: DATA_ROOT/text/NAME or the path ("" for train)
    double weight;     // its share of the tokens, in (0, 1]; 0 when the shares are natural
} MixSource;

typedef struct {
    MixSource src[MIX_MAX_SOURCES];  // (n) train first, then the others as written
    int n;
    int weighted;      // 1: the weights are given (they add up to 1); 0: natural shares
} Mix;

// Parse and check a spec (NULL or "": train alone, natural). data_root: where text/ is (the
// default data root). 0, or -1 + a usage error naming --mix.
int mix_parse(const char *spec, const char *data_root, Mix *out);

// The folders of DATA_ROOT/text/ a SOURCE name may be (all but train, a keyword, and val, held
// out), sorted, separated by sep, into buf ("" when there are none).
void mix_text_folders(const char *data_root, const char *sep, char *buf, size_t n);

// Whether a spec changes anything: it names a source other than train.
int mix_is_mixture(const Mix *m);

// Source m (not train) as training shards encoded with the tokenizer of the prepared data folder
// data_dir (train-only; cached under cache_dir, so a second call finds them), checked against the
// validation inputs data_dir's manifest.json names, which it must not hold. 0 + *out (its shard
// folder), or -1 + err naming the source. Training (rank 0 first) and the planner call it.
int mix_prepare_source(const MixSource *m, const char *data_dir, const char *cache_dir, int threads, int quiet,
                       PrepareResult *out);
