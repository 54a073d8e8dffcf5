/*
 * Drives the mlp C library (cargo xtask build mlp --lib) the way an
 * application would: mlp IN.f32 OUT.f32 COUNT reads COUNT samples of raw
 * f32 input, runs each and writes the outputs. It first checks that bad
 * arguments come back as errors. Exit status 0 only when every check held.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"

static int failures = 0;

static void expect(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "check failed: %s\n", what);
        failures++;
    }
}

static void expect_status(mlp_status got, mlp_status want, const char *what) {
    if (got != want) {
        fprintf(stderr, "%s: got %d (%s), expected %d (%s)\n", what, (int)got, mlp_error_message(got), (int)want,
                mlp_error_message(want));
        failures++;
    }
}

/* Null handles, null buffers, wrong lengths and bad thread counts. */
static void check_errors(void) {
    float in[MLP_INPUT_X_ELEMENTS] = {0};
    float out[MLP_OUTPUT_PROBS_ELEMENTS];
    mlp_model *model = NULL;
    expect_status(mlp_create(NULL), MLP_ERROR_NULL_POINTER, "create(NULL)");
    expect_status(mlp_run(NULL), MLP_ERROR_NULL_POINTER, "run(NULL)");
    expect(mlp_input_x(NULL) == NULL, "input_x(NULL) is NULL");
    expect(mlp_output_probs(NULL) == NULL, "output_probs(NULL) is NULL");
    expect_status(mlp_set_input_x(NULL, in, MLP_INPUT_X_ELEMENTS), MLP_ERROR_NULL_POINTER, "set_input_x(NULL, ...)");
    expect_status(mlp_set_threads(0), MLP_ERROR_THREAD_COUNT, "set_threads(0)");
    expect_status(mlp_create(&model), MLP_OK, "create");
    if (model == NULL) {
        return;
    }
    expect_status(mlp_set_input_x(model, NULL, MLP_INPUT_X_ELEMENTS), MLP_ERROR_NULL_POINTER, "set_input_x(m, NULL)");
    expect_status(mlp_set_input_x(model, in, MLP_INPUT_X_ELEMENTS - 1), MLP_ERROR_LENGTH, "set_input_x short");
    expect_status(mlp_get_output_probs(model, out, MLP_OUTPUT_PROBS_ELEMENTS + 1), MLP_ERROR_LENGTH,
                  "get_output_probs long");
    expect(strlen(mlp_error_message((mlp_status)1234)) > 0, "an unknown status has a message");
    mlp_destroy(model);
    mlp_destroy(NULL);
}

/* The dims macros agree with each other. */
static void check_dims(void) {
    static const size_t dims[] = MLP_INPUT_X_DIMS;
    size_t n = 1;
    size_t i;
    expect(sizeof dims / sizeof dims[0] == MLP_INPUT_X_RANK, "MLP_INPUT_X_DIMS has MLP_INPUT_X_RANK dims");
    for (i = 0; i < MLP_INPUT_X_RANK; i++) {
        n *= dims[i];
    }
    expect(n == MLP_INPUT_X_ELEMENTS, "MLP_INPUT_X_DIMS multiply to MLP_INPUT_X_ELEMENTS");
}

int main(int argc, char **argv) {
    FILE *in_file, *out_file;
    size_t count, i;
    mlp_model *model = NULL;
    float in[MLP_INPUT_X_ELEMENTS], out[MLP_OUTPUT_PROBS_ELEMENTS];
    if (argc != 4) {
        fprintf(stderr, "usage: %s IN.f32 OUT.f32 COUNT\n", argv[0]);
        return 2;
    }
    count = strtoul(argv[3], NULL, 10);
    check_dims();
    check_errors();
    expect_status(mlp_set_threads(1), MLP_OK, "set_threads(1) before the first run");
    in_file = fopen(argv[1], "rb");
    out_file = fopen(argv[2], "wb");
    if (in_file == NULL || out_file == NULL) {
        fprintf(stderr, "cannot open %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    expect_status(mlp_create(&model), MLP_OK, "create");
    if (model == NULL) {
        return 1;
    }
    for (i = 0; i < count; i++) {
        if (fread(in, sizeof in, 1, in_file) != 1) {
            fprintf(stderr, "%s holds fewer than %lu samples\n", argv[1], (unsigned long)count);
            return 2;
        }
        /* Both ways in and out: copies on even samples, pointers on odd ones. */
        if (i % 2 == 0) {
            expect_status(mlp_set_input_x(model, in, MLP_INPUT_X_ELEMENTS), MLP_OK, "set_input_x");
        } else {
            memcpy(mlp_input_x(model), in, sizeof in);
        }
        expect_status(mlp_run(model), MLP_OK, "run");
        if (i % 2 == 0) {
            expect_status(mlp_get_output_probs(model, out, MLP_OUTPUT_PROBS_ELEMENTS), MLP_OK, "get_output_probs");
        } else {
            memcpy(out, mlp_output_probs(model), sizeof out);
        }
        fwrite(out, sizeof out, 1, out_file);
    }
    mlp_destroy(model);
    fclose(in_file);
    if (fclose(out_file) != 0) {
        fprintf(stderr, "writing %s failed\n", argv[2]);
        return 2;
    }
    return failures == 0 ? 0 : 1;
}
