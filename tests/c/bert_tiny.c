/*
 * Drives the bert_tiny C library (cargo xtask build bert_tiny --lib) with
 * two model handles on two threads, as a server would:
 * bert_tiny IDS.i64 MASK.f32 OUT.f32 COUNT reads COUNT samples (token ids
 * and attention mask), runs the even samples on one handle and the odd
 * ones on another, each in its own thread, and writes every output in
 * sample order. Exit status 0 only when every call succeeded.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "bert_tiny.h"

enum { IDS = BERT_TINY_INPUT_INPUT_IDS_ELEMENTS, MASK = BERT_TINY_INPUT_ATTENTION_MASK_ELEMENTS };
enum { HIDDEN = BERT_TINY_OUTPUT_HIDDEN_ELEMENTS };

struct job {
    size_t first, count;
    const int64_t *ids;
    const float *mask;
    float *out;
    int failed;
};

/* Runs samples first, first + 2, ... on a handle of its own. */
static void *run_samples(void *arg) {
    struct job *job = arg;
    bert_tiny_model *model = NULL;
    size_t i;
    if (bert_tiny_create(&model) != BERT_TINY_OK) {
        job->failed = 1;
        return NULL;
    }
    for (i = job->first; i < job->count; i += 2) {
        if (bert_tiny_set_input_input_ids(model, job->ids + i * IDS, IDS) != BERT_TINY_OK
            || bert_tiny_set_input_attention_mask(model, job->mask + i * MASK, MASK) != BERT_TINY_OK
            || bert_tiny_run(model) != BERT_TINY_OK
            || bert_tiny_get_output_hidden(model, job->out + i * HIDDEN, HIDDEN) != BERT_TINY_OK) {
            job->failed = 1;
        }
    }
    bert_tiny_destroy(model);
    return NULL;
}

static void *read_all(const char *path, size_t bytes) {
    FILE *f = fopen(path, "rb");
    void *data = malloc(bytes);
    if (f == NULL || data == NULL || fread(data, bytes, 1, f) != 1) {
        fprintf(stderr, "cannot read %lu bytes from %s\n", (unsigned long)bytes, path);
        exit(2);
    }
    fclose(f);
    return data;
}

int main(int argc, char **argv) {
    size_t count;
    int64_t *ids;
    float *mask, *out;
    pthread_t threads[2];
    struct job jobs[2];
    int t, failed = 0;
    FILE *out_file;
    if (argc != 5) {
        fprintf(stderr, "usage: %s IDS.i64 MASK.f32 OUT.f32 COUNT\n", argv[0]);
        return 2;
    }
    count = strtoul(argv[4], NULL, 10);
    ids = read_all(argv[1], count * IDS * sizeof *ids);
    mask = read_all(argv[2], count * MASK * sizeof *mask);
    out = calloc(count * HIDDEN, sizeof *out);
    if (out == NULL) {
        return 2;
    }
    for (t = 0; t < 2; t++) {
        jobs[t] = (struct job){ (size_t)t, count, ids, mask, out, 0 };
        if (pthread_create(&threads[t], NULL, run_samples, &jobs[t]) != 0) {
            return 2;
        }
    }
    for (t = 0; t < 2; t++) {
        pthread_join(threads[t], NULL);
        failed |= jobs[t].failed;
    }
    out_file = fopen(argv[3], "wb");
    if (out_file == NULL || fwrite(out, sizeof *out, count * HIDDEN, out_file) != count * HIDDEN
        || fclose(out_file) != 0) {
        fprintf(stderr, "writing %s failed\n", argv[3]);
        return 2;
    }
    free(ids);
    free(mask);
    free(out);
    if (failed) {
        fprintf(stderr, "a call failed\n");
    }
    return failed ? 1 : 0;
}
