/* `dtsim train` and `dtsim bench trainer`: the trainer on its own, one process, no
 * simulation. train prints test accuracy after each epoch; bench trainer prints one line of
 * figures (speed, the share of the time OpenBLAS's sgemm alone would need, accuracy).
 * Image models train on an MNIST-format directory; gpt on a byte-level text (--text): every
 * window of seq + 1 bytes of its first 90% for training, of its last 10% for validation. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_gemm.h"
#include "cli_util.h"
#include "data.h"
#include "model.h"
#include "train.h"

/* Debian's base-files installs it everywhere: 35 KB of English prose. */
#define TRAINER_DEFAULT_TEXT "/usr/share/common-licenses/GPL-3"

typedef struct train_opts {
    trainer_model_config_t model;
    const char *hidden_text;
    int hidden_given;
    const char *text; /* gpt: the text file */
    trainer_optim_t sgd;
    trainer_lr_schedule_t schedule;
    long warmup; /* steps */
    float lr_min;
    long batch, epochs, threads, seed, limit;
    const char *data_dir;
    const char *device; /* cpu, cuda or auto */
    long steps;         /* calibrate: timed steps */
    const char *out;    /* calibrate: the device profile's file, or NULL: print it */
} train_opts_t;

static void train_opts_default(train_opts_t *o, long epochs)
{
    memset(o, 0, sizeof *o);
    trainer_model_config_default(&o->model, TRAINER_ARCH_MLP);
    o->hidden_text = "256,128";
    o->sgd.lr = 0.05f;
    o->sgd.beta1 = 0.9;
    o->sgd.beta2 = 0.999;
    o->sgd.eps = 1e-8;
    o->batch = 64;
    o->epochs = epochs;
    o->threads = 1;
    o->seed = 1;
    o->data_dir = TRAINER_FASHION_MNIST_DIR;
    o->device = "cpu";
    o->text = TRAINER_DEFAULT_TEXT;
    o->steps = 200;
}

enum {
    OPT_MODEL = 1,
    OPT_HIDDEN,
    OPT_LAYERS,
    OPT_HEADS,
    OPT_SEQ,
    OPT_TEXT,
    OPT_CONV,
    OPT_FC,
    OPT_BATCH,
    OPT_EPOCHS,
    OPT_LR,
    OPT_OPTIMIZER,
    OPT_SCHEDULE,
    OPT_WARMUP,
    OPT_LR_MIN,
    OPT_MOMENTUM,
    OPT_BETA1,
    OPT_BETA2,
    OPT_EPS,
    OPT_WEIGHT_DECAY,
    OPT_CLIP_NORM,
    OPT_THREADS,
    OPT_SEED,
    OPT_DATA,
    OPT_LIMIT,
    OPT_DEVICE,
    OPT_STEPS,
    OPT_OUT,
    OPT_GEMM
};

/* The training options of train, bench trainer and calibrate; EPOCHS: --epochs' default. */
#define TRAIN_OPTIONS(EPOCHS)                                                                      \
    {.id = OPT_MODEL,                                                                              \
     .name = "model",                                                                              \
     .kind = CLI_VALUE_CHOICE,                                                                     \
     .metavar = "NAME",                                                                            \
     .choices = "logreg,mlp,cnn,gpt",                                                              \
     .help = "logreg, mlp, cnn or gpt [mlp]"},                                                     \
        {.id = OPT_HIDDEN,                                                                         \
         .name = "hidden",                                                                         \
         .kind = CLI_VALUE_TEXT,                                                                   \
         .metavar = "LIST",                                                                        \
         .help = "mlp hidden sizes; gpt: its width [256,128; gpt 64]"},                            \
        {.id = OPT_LAYERS,                                                                         \
         .name = "layers",                                                                         \
         .kind = CLI_VALUE_INT,                                                                    \
         .metavar = "N",                                                                           \
         .help = "gpt blocks [2]",                                                                 \
         .lo = 1,                                                                                  \
         .hi = 1024},                                                                              \
        {.id = OPT_HEADS,                                                                          \
         .name = "heads",                                                                          \
         .kind = CLI_VALUE_INT,                                                                    \
         .metavar = "N",                                                                           \
         .help = "gpt attention heads [4]",                                                        \
         .lo = 1,                                                                                  \
         .hi = 1024},                                                                              \
        {.id = OPT_SEQ,                                                                            \
         .name = "seq",                                                                            \
         .kind = CLI_VALUE_INT,                                                                    \
         .metavar = "N",                                                                           \
         .help = "gpt tokens per window [64]",                                                     \
         .lo = 1,                                                                                  \
         .hi = TRAINER_GPT_MAX_SEQ},                                                               \
        {.id = OPT_TEXT,                                                                           \
         .name = "text",                                                                           \
         .kind = CLI_VALUE_PATH,                                                                   \
         .metavar = "FILE",                                                                        \
         .help = "gpt: the text, byte-level tokens [" TRAINER_DEFAULT_TEXT "]"},                   \
        {.id = OPT_CONV,                                                                           \
         .name = "conv",                                                                           \
         .kind = CLI_VALUE_TEXT,                                                                   \
         .metavar = "C1,C2",                                                                       \
         .help = "cnn convolution channels [16,32]"},                                              \
        {.id = OPT_FC,                                                                             \
         .name = "fc",                                                                             \
         .kind = CLI_VALUE_INT,                                                                    \
         .metavar = "N",                                                                           \
         .help = "cnn dense hidden size [128]",                                                    \
         .lo = 1,                                                                                  \
         .hi = 1 << 20},                                                                           \
        {.id = OPT_BATCH,                                                                          \
         .name = "batch",                                                                          \
         .kind = CLI_VALUE_INT,                                                                    \
         .metavar = "N",                                                                           \
         .help = "samples per step [64]",                                                          \
         .lo = 1,                                                                                  \
         .hi = 65536},                                                                             \
        {.id = OPT_EPOCHS,                                                                         \
         .name = "epochs",                                                                         \
         .kind = CLI_VALUE_INT,                                                                    \
         .metavar = "N",                                                                           \
         .help = "passes over the training set [" #EPOCHS "]",                                     \
         .lo = 1,                                                                                  \
         .hi = 100000},                                                                            \
        {.id = OPT_LR,                                                                             \
         .name = "lr",                                                                             \
         .kind = CLI_VALUE_FLOAT,                                                                  \
         .metavar = "X",                                                                           \
         .help = "learning rate, above 0 [0.05]",                                                  \
         .lo = 0,                                                                                  \
         .hi = 100},                                                                               \
        {.id = OPT_OPTIMIZER,                                                                      \
         .name = "optimizer",                                                                      \
         .kind = CLI_VALUE_CHOICE,                                                                 \
         .metavar = "NAME",                                                                        \
         .choices = "sgd,adam,adamw",                                                              \
         .help = "sgd, adam or adamw (PyTorch's) [sgd]"},                                          \
        {.id = OPT_SCHEDULE,                                                                       \
         .name = "schedule",                                                                       \
         .kind = CLI_VALUE_CHOICE,                                                                 \
         .metavar = "NAME",                                                                        \
         .choices = "constant,cosine,linear",                                                      \
         .help = "learning rate per step after the warmup: constant, or cosine or linear decay "   \
                 "to --lr-min [constant]"},                                                        \
        {.id = OPT_WARMUP,                                                                         \
         .name = "warmup",                                                                         \
         .kind = CLI_VALUE_INT,                                                                    \
         .metavar = "N",                                                                           \
         .help = "steps of linear warmup [0]",                                                     \
         .lo = 0,                                                                                  \
         .hi = 1e9},                                                                               \
        {.id = OPT_LR_MIN,                                                                         \
         .name = "lr-min",                                                                         \
         .kind = CLI_VALUE_FLOAT,                                                                  \
         .metavar = "X",                                                                           \
         .help = "the decay's floor [0]",                                                          \
         .lo = 0,                                                                                  \
         .hi = 100},                                                                               \
        {.id = OPT_MOMENTUM,                                                                       \
         .name = "momentum",                                                                       \
         .kind = CLI_VALUE_FLOAT,                                                                  \
         .metavar = "X",                                                                           \
         .help = "SGD momentum, below 1 [0]",                                                      \
         .lo = 0,                                                                                  \
         .hi = 0.999999},                                                                          \
        {.id = OPT_BETA1,                                                                          \
         .name = "beta1",                                                                          \
         .kind = CLI_VALUE_FLOAT,                                                                  \
         .metavar = "X",                                                                           \
         .help = "adam and adamw's beta1, below 1 [0.9]",                                          \
         .lo = 0,                                                                                  \
         .hi = 1},                                                                                 \
        {.id = OPT_BETA2,                                                                          \
         .name = "beta2",                                                                          \
         .kind = CLI_VALUE_FLOAT,                                                                  \
         .metavar = "X",                                                                           \
         .help = "adam and adamw's beta2, below 1 [0.999]",                                        \
         .lo = 0,                                                                                  \
         .hi = 1},                                                                                 \
        {.id = OPT_EPS,                                                                            \
         .name = "eps",                                                                            \
         .kind = CLI_VALUE_FLOAT,                                                                  \
         .metavar = "X",                                                                           \
         .help = "adam and adamw's epsilon, above 0 and below 1 [1e-8]",                           \
         .lo = 0,                                                                                  \
         .hi = 1},                                                                                 \
        {.id = OPT_WEIGHT_DECAY,                                                                   \
         .name = "weight-decay",                                                                   \
         .kind = CLI_VALUE_FLOAT,                                                                  \
         .metavar = "X",                                                                           \
         .help = "weight decay: L2, decoupled for adamw [0]",                                      \
         .lo = 0,                                                                                  \
         .hi = 1},                                                                                 \
        {.id = OPT_CLIP_NORM,                                                                      \
         .name = "clip-norm",                                                                      \
         .kind = CLI_VALUE_FLOAT,                                                                  \
         .metavar = "X",                                                                           \
         .help = "clip the gradient to this global 2-norm; 0: off [0]",                            \
         .lo = 0,                                                                                  \
         .hi = 1e9},                                                                               \
        {.id = OPT_THREADS,                                                                        \
         .name = "threads",                                                                        \
         .kind = CLI_VALUE_INT,                                                                    \
         .metavar = "N",                                                                           \
         .help = "OpenBLAS threads [1]",                                                           \
         .lo = 1,                                                                                  \
         .hi = 1024},                                                                              \
        {.id = OPT_SEED,                                                                           \
         .name = "seed",                                                                           \
         .kind = CLI_VALUE_INT,                                                                    \
         .metavar = "N",                                                                           \
         .help = "initialisation and batch-order seed [1]",                                        \
         .lo = 0,                                                                                  \
         .hi = 2147483647},                                                                        \
        {.id = OPT_DATA,                                                                           \
         .name = "data",                                                                           \
         .kind = CLI_VALUE_DIR,                                                                    \
         .metavar = "DIR",                                                                         \
         .help = "MNIST-format directory [" TRAINER_FASHION_MNIST_DIR "]"},                        \
        {.id = OPT_LIMIT,                                                                          \
         .name = "limit",                                                                          \
         .kind = CLI_VALUE_INT,                                                                    \
         .metavar = "N",                                                                           \
         .help = "use only the first N training samples [all]",                                    \
         .lo = 1,                                                                                  \
         .hi = (double)(1L << 40)},                                                                \
    {                                                                                              \
        .id = OPT_DEVICE, .name = "device", .kind = CLI_VALUE_CHOICE, .metavar = "NAME",           \
        .choices = "cpu,cuda,auto", .help = "cpu, cuda or auto (cuda when a GPU is usable) [cpu]"  \
    }

static const cli_option train_options[] = {TRAIN_OPTIONS(5), {0}};
static const cli_option bench_trainer_options[] = {TRAIN_OPTIONS(1), {0}};
static const cli_option calibrate_options[] = {
    TRAIN_OPTIONS(1),
    {.help = "calibrate options:"},
    {.id = OPT_STEPS,
     .name = "steps",
     .kind = CLI_VALUE_INT,
     .metavar = "N",
     .help = "timed steps, after 10 warm-up steps [200]",
     .lo = 10,
     .hi = 1000000},
    {.id = OPT_OUT,
     .name = "out",
     .kind = CLI_VALUE_PATH,
     .metavar = "FILE.ini",
     .help = "write the device profile there [print it only]"},
    {.id = OPT_GEMM,
     .name = "gemm",
     .help = "the backend's GEMM curve instead (dtsim calibrate --gemm --help)"},
    {0},
};

const cli_spec cli_train_spec = {
    .usage = "[OPTIONS]",
    .options = train_options,
    .options_title = "options (default in brackets):",
};
const cli_spec cli_bench_trainer_spec = {
    .usage = "[OPTIONS]",
    .options = bench_trainer_options,
    .options_title = "options (default in brackets):",
};
const cli_spec cli_calibrate_spec = {
    .usage = "[OPTIONS]",
    .options = calibrate_options,
    .options_title = "options (default in brackets):",
};

/* Returns -1 when help was printed, CLI_EXIT_USAGE on a bad option, 0 otherwise. */
static int train_opts_parse(train_opts_t *o, const char *cmd, const cli_spec *spec, int argc,
                            char **argv)
{
    dt_err_t err;
    int id;
    cli_parser p;
    cli_parse_init(&p, cmd, spec, argc, argv);
    while ((id = cli_parse_next(&p)) > 0) {
        const char *v = p.value;
        double x = p.number;
        switch (id) {
        case OPT_MODEL:
            if (trainer_arch_parse(&o->model.arch, v, &err))
                return cli_usage_error(cmd, "--model: %s", err.msg);
            break;
        case OPT_HIDDEN:
            o->hidden_text = v;
            o->hidden_given = 1;
            break;
        case OPT_LAYERS:
            o->model.layers = (int)p.integer;
            break;
        case OPT_HEADS:
            o->model.heads = (int)p.integer;
            break;
        case OPT_SEQ:
            o->model.seq = (int)p.integer;
            break;
        case OPT_TEXT:
            o->text = v;
            break;
        case OPT_OPTIMIZER:
            o->sgd.kind = !strcmp(v, "sgd")    ? TRAINER_OPT_SGD
                          : !strcmp(v, "adam") ? TRAINER_OPT_ADAM
                                               : TRAINER_OPT_ADAMW;
            break;
        case OPT_BETA1:
        case OPT_BETA2:
        case OPT_EPS:
            if (x == 1.0 || (id == OPT_EPS && x == 0.0))
                return cli_usage_error(cmd, "--%s %s: expected a number in %s", p.option->name, v,
                                       id == OPT_EPS ? "(0, 1)" : "[0, 1)");
            *(id == OPT_BETA1 ? &o->sgd.beta1 : id == OPT_BETA2 ? &o->sgd.beta2 : &o->sgd.eps) = x;
            break;
        case OPT_CLIP_NORM:
            o->sgd.clip_norm = (float)x;
            break;
        case OPT_WARMUP:
            o->warmup = p.integer;
            break;
        case OPT_LR_MIN:
            o->lr_min = (float)x;
            break;
        case OPT_SCHEDULE:
            if (trainer_lr_schedule_parse(&o->schedule, v, &err))
                return cli_usage_error(cmd, "--schedule: %s", err.msg);
            break;
        case OPT_CONV: {
            int a, b, n;
            if (sscanf(v, "%d,%d%n", &a, &b, &n) != 2 || v[n] || a < 1 || b < 1 || a > 4096 ||
                b > 4096)
                return cli_usage_error(cmd, "--conv %s: expected C1,C2 in [1, 4096]", v);
            o->model.conv[0] = a;
            o->model.conv[1] = b;
            break;
        }
        case OPT_FC:
            o->model.fc = (int)p.integer;
            break;
        case OPT_BATCH:
            o->batch = p.integer;
            break;
        case OPT_EPOCHS:
            o->epochs = p.integer;
            break;
        case OPT_LR:
            if (x == 0.0)
                return cli_usage_error(cmd, "--lr %s: expected a number in (0, 100]", v);
            o->sgd.lr = (float)x;
            break;
        case OPT_MOMENTUM:
            o->sgd.momentum = (float)x;
            break;
        case OPT_WEIGHT_DECAY:
            o->sgd.weight_decay = (float)x;
            break;
        case OPT_THREADS:
            o->threads = p.integer;
            break;
        case OPT_SEED:
            o->seed = p.integer;
            break;
        case OPT_DATA:
            o->data_dir = v;
            break;
        case OPT_DEVICE:
            o->device = v;
            break;
        case OPT_LIMIT:
            o->limit = p.integer;
            break;
        case OPT_STEPS:
            o->steps = p.integer;
            break;
        case OPT_OUT:
            o->out = v;
            break;
        }
    }
    if (id < 0)
        return p.status == CLI_EXIT_OK ? -1 : p.status;
    if (p.n_args)
        return cli_usage_error(cmd, "unexpected argument \"%s\"", p.args[0]);
    if (o->model.arch == TRAINER_ARCH_GPT && !o->hidden_given)
        o->hidden_text = "64";
    if ((o->model.arch == TRAINER_ARCH_MLP || o->model.arch == TRAINER_ARCH_GPT) &&
        trainer_hidden_parse(&o->model, o->hidden_text, &err))
        return cli_usage_error(cmd, "--hidden: %s", err.msg);
    if (o->model.arch == TRAINER_ARCH_GPT && o->model.n_hidden != 1)
        return cli_usage_error(cmd, "--hidden: gpt takes one size, its width, got \"%s\"",
                               o->hidden_text);
    if (o->sgd.kind != TRAINER_OPT_SGD && o->sgd.momentum != 0.0f)
        return cli_usage_error(cmd, "--momentum: sgd's; %s reads --beta1 instead",
                               trainer_optimizer_name(o->sgd.kind));
    return 0;
}

/* Everything a training command holds; released by session_free whatever happened. */
typedef struct session {
    trainer_dataset_t train, test;
    trainer_model_t model;
    trainer_learner_t learner;
} session_t;

/* The text of --text split 90/10 into training and validation windows. */
static int load_text(session_t *s, const train_opts_t *o, const char *cmd)
{
    FILE *f = fopen(o->text, "rb");
    if (!f) {
        fprintf(stderr, "dtsim %s: --text: %s: %s\n", cmd, o->text, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    size_t cap = 1 << 16, len = 0, got;
    unsigned char *buf = dt_malloc(cap);
    while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            unsigned char *more = realloc(buf, cap *= 2);
            DT_CHECK(more, "out of memory reading %s", o->text);
            buf = more;
        }
    }
    int bad = ferror(f);
    fclose(f);
    dt_err_t err;
    size_t cut = len - len / 10;
    int rc = 0;
    if (bad) {
        fprintf(stderr, "dtsim %s: --text: %s: read error\n", cmd, o->text);
        rc = CLI_EXIT_USAGE;
    } else if (trainer_gpt_windows(&s->train, buf, cut, o->model.seq, &err) ||
               trainer_gpt_windows(&s->test, buf + cut, len - cut, o->model.seq, &err)) {
        fprintf(stderr, "dtsim %s: --text: %s: %s (its last 10%% is the validation text)\n", cmd,
                o->text, err.msg);
        rc = CLI_EXIT_USAGE;
    }
    free(buf);
    return rc;
}

static int session_init(session_t *s, train_opts_t *o, const char *cmd)
{
    dt_err_t err;
    memset(s, 0, sizeof *s);
    if (o->model.arch == TRAINER_ARCH_GPT) {
        int rc = load_text(s, o, cmd);
        if (rc)
            return rc;
    } else if (trainer_dataset_load_dir(&s->train, o->data_dir, "train", 10, &err) ||
               trainer_dataset_load_dir(&s->test, o->data_dir, "t10k", 10, &err)) {
        fprintf(stderr, "dtsim %s: %s\n", cmd, err.msg);
        return CLI_EXIT_USAGE;
    }
    /* the model is built for the training images: test images of another shape would
     * be read past their end (as a run refuses them: sim/engine/run.c) */
    if (s->train.rows != s->test.rows || s->train.cols != s->test.cols ||
        s->train.channels != s->test.channels) {
        fprintf(stderr,
                "dtsim %s: --data %s: the training images are %dx%dx%d, the test images "
                "%dx%dx%d (expected one shape)\n",
                cmd, o->data_dir, s->train.channels, s->train.rows, s->train.cols, s->test.channels,
                s->test.rows, s->test.cols);
        return CLI_EXIT_USAGE;
    }
    if (o->limit && (size_t)o->limit < s->train.n)
        s->train.n = (size_t)o->limit;
    o->model.in_channels = s->train.channels;
    o->model.in_h = s->train.rows;
    o->model.in_w = s->train.cols;
    o->model.classes = s->train.classes;
    if (trainer_model_build(&s->model, &o->model, &err)) {
        fprintf(stderr, "dtsim %s: %s\n", cmd, err.msg);
        return CLI_EXIT_USAGE;
    }
    const trainer_backend_t *be = trainer_backend_by_name(o->device, &err);
    if (!be || trainer_model_check_backend(&s->model, be, &err)) {
        fprintf(stderr, "dtsim %s: --device: %s\n", cmd, err.msg);
        return CLI_EXIT_USAGE;
    }
    trainer_backend_cpu_set_threads((int)o->threads);
    trainer_learner_init(&s->learner, be, &s->model, &o->sgd, (int)o->batch, (uint64_t)o->seed);
    /* the rate step by step: epochs of ceil(n / batch) steps */
    size_t per_epoch = (s->train.n + (size_t)o->batch - 1) / (size_t)o->batch;
    s->learner.lr = (trainer_lr_t){o->schedule, o->sgd.lr, o->lr_min, o->warmup};
    s->learner.lr_total = (long)per_epoch * o->epochs;
    return 0;
}

static void session_free(session_t *s)
{
    trainer_learner_free(&s->learner);
    trainer_dataset_free(&s->train);
    trainer_dataset_free(&s->test);
}

static void describe_model(const session_t *s, const train_opts_t *o, char *out, size_t len)
{
    const trainer_model_config_t *c = &s->model.cfg;
    switch (c->arch) {
    case TRAINER_ARCH_MLP:
        snprintf(out, len, "model=mlp hidden=%s", o->hidden_text);
        break;
    case TRAINER_ARCH_CNN:
        snprintf(out, len, "model=cnn conv=%d,%d fc=%d", c->conv[0], c->conv[1], c->fc);
        break;
    case TRAINER_ARCH_GPT:
        snprintf(out, len, "model=gpt layers=%d hidden=%d heads=%d seq=%d vocab=%d", c->layers,
                 c->hidden[0], c->heads, c->seq, c->classes);
        break;
    default:
        snprintf(out, len, "model=%s", trainer_arch_name(c->arch));
    }
}

int cli_train(int argc, char **argv)
{
    train_opts_t o;
    train_opts_default(&o, 5);
    int rc = train_opts_parse(&o, "train", &cli_train_spec, argc, argv);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    session_t s;
    rc = session_init(&s, &o, "train");
    if (rc == 0) {
        char desc[128];
        describe_model(&s, &o, desc, sizeof desc);
        printf("%s params=%zu batch=%ld optimizer=%s lr=%g momentum=%g train=%zu test=%zu\n", desc,
               s.model.n_params, o.batch, trainer_optimizer_name(o.sgd.kind), (double)o.sgd.lr,
               (double)o.sgd.momentum, s.train.n, s.test.n);
        if (o.model.arch == TRAINER_ARCH_GPT) /* the loss to beat */
            printf("unigram val_loss=%.4f (the validation bytes under the training bytes' "
                   "frequencies: a model that knows nothing else)\n",
                   trainer_text_unigram_loss(&s.train, &s.test));
        /* each line leaves at once, also into a file or a pipe: an interrupted run keeps
         * every epoch it printed */
        fflush(stdout);
        for (long e = 1; e <= o.epochs; e++) {
            double t0 = dt_wall_seconds();
            trainer_epoch_stats_t st =
                trainer_learner_epoch(&s.learner, &s.train, NULL, s.train.n, (int)o.batch);
            double dt = dt_wall_seconds() - t0;
            if (st.diverged) {
                printf("epoch %ld diverged: loss %g at step %zu\n", e, st.mean_loss, st.steps);
                rc = CLI_EXIT_RUN;
                break;
            }
            trainer_eval_t ev = trainer_evaluate(&s.learner, s.learner.params, &s.test);
            if (o.model.arch == TRAINER_ARCH_GPT) /* per token */
                printf("epoch %ld train_loss=%.4f val_loss=%.4f val_perplexity=%.2f "
                       "val_next_token_acc=%.4f (%.1f s)\n",
                       e, st.mean_loss, ev.loss, exp(ev.loss), ev.accuracy, dt);
            else
                printf("epoch %ld train_loss=%.4f test_loss=%.4f test_acc=%.4f (%.1f s)\n", e,
                       st.mean_loss, ev.loss, ev.accuracy, dt);
            fflush(stdout);
        }
    }
    session_free(&s);
    return rc;
}

/* No-op stand-ins: a backend that runs only the matrix products of a step, so timing it
 * gives what OpenBLAS's sgemm alone needs for the same calls. */
static void noop_bias(float *y, const float *b, size_t s, int r, int o, int c, int i)
{
    (void)y, (void)b, (void)s, (void)r, (void)o, (void)c, (void)i;
}
static void noop_bias_grad(float *d, size_t s, const float *y, int r, int o, int c, int i)
{
    (void)d, (void)s, (void)y, (void)r, (void)o, (void)c, (void)i;
}
static void noop_relu(float *y, const float *x, size_t n)
{
    (void)y, (void)x, (void)n;
}
static void noop_relu_b(float *dx, const float *dy, const float *y, size_t n)
{
    (void)dx, (void)dy, (void)y, (void)n;
}
static void noop_col(float *d, const float *s, int c, int b, int h, int w, int k)
{
    (void)d, (void)s, (void)c, (void)b, (void)h, (void)w, (void)k;
}
static void noop_pool(float *y, int32_t *a, const float *x, int p, int h, int w, int k)
{
    (void)y, (void)a, (void)x, (void)p, (void)h, (void)w, (void)k;
}
static void noop_pool_b(float *dx, const float *dy, const int32_t *a, int p, int h, int w, int k)
{
    (void)dx, (void)dy, (void)a, (void)p, (void)h, (void)w, (void)k;
}
static void noop_permute(float *d, const float *s, int r, int a, int b, int i)
{
    (void)d, (void)s, (void)r, (void)a, (void)b, (void)i;
}
static void noop_xent(float *d, const float *z, const uint8_t *y, int n, int b, int c, float g,
                      double *l, int *r)
{
    (void)d, (void)z, (void)y, (void)b, (void)c, (void)g;
    for (int i = 0; i < n; i++)
        l[i] = 0.0, r[i] = 0;
}

static void noop_ln(float *o, float *m, float *r, const float *x, const float *w, const float *b,
                    int n, int c)
{
    (void)o, (void)m, (void)r, (void)x, (void)w, (void)b, (void)n, (void)c;
}
static void noop_ln_b(float *dx, float *dw, float *db, const float *d, const float *x,
                      const float *w, const float *m, const float *r, int n, int c, int a)
{
    (void)dx, (void)dw, (void)db, (void)d, (void)x, (void)w, (void)m, (void)r, (void)n, (void)c,
        (void)a;
}
static void noop_gelu_b(float *dx, const float *dy, const float *x, size_t n)
{
    (void)dx, (void)dy, (void)x, (void)n;
}
static void noop_attn(float *o, float *a, const float *q, int b, int t, int c, int h)
{
    (void)o, (void)a, (void)q, (void)b, (void)t, (void)c, (void)h;
}
static void noop_attn_b(float *d, float *s, const float *o, const float *q, const float *a, int b,
                        int t, int c, int h)
{
    (void)d, (void)s, (void)o, (void)q, (void)a, (void)b, (void)t, (void)c, (void)h;
}
static void noop_embed(float *o, const int32_t *t, const float *e, const float *p, int b, int s,
                       int c)
{
    (void)o, (void)t, (void)e, (void)p, (void)b, (void)s, (void)c;
}
static void noop_embed_b(float *e, float *p, const float *d, const int32_t *t, int b, int s, int c)
{
    (void)e, (void)p, (void)d, (void)t, (void)b, (void)s, (void)c;
}
static void noop_bias1(float *y, const float *b, int o, int c, int i)
{
    (void)y, (void)b, (void)o, (void)c, (void)i;
}
static void noop_bias_grad1(float *d, const float *y, int o, int c, int i)
{
    (void)d, (void)y, (void)o, (void)c, (void)i;
}
static void noop_xent1(float *d, const float *z, const uint8_t *y, int b, int c, float g, double *l,
                       int *r)
{
    (void)d, (void)z, (void)y, (void)b, (void)c, (void)g, *l = 0.0, *r = 0;
}

/* The real backend's GEMM (gpt calls the plain one), counting its FLOPs. */
static double counted_flops;
static const trainer_backend_t *counted_be;
static void counted_gemm1(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                          const float *b, int ldb, float beta, float *c, int ldc)
{
    counted_flops += 2.0 * m * n * k;
    counted_be->gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* The real backend's batched GEMM, counting the FLOPs it is asked for (2 m n k each). */
static void counted_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                         size_t sa, const float *b, int ldb, size_t sb, float beta, float *c,
                         int ldc, size_t sc, int count)
{
    counted_flops += 2.0 * m * n * k * count;
    counted_be->gemm_batched(ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
                             count);
}

/* Seconds for `steps` full-batch steps with only the matrix products; *gflops gets the
 * products' own rate. */
static double gemm_only_seconds(session_t *s, const train_opts_t *o, size_t steps, double *gflops)
{
    trainer_backend_t gemm_only = *s->learner.be;
    counted_be = s->learner.be;
    counted_flops = 0.0;
    gemm_only.gemm_batched = counted_gemm;
    gemm_only.bias_add_batched = noop_bias;
    gemm_only.bias_grad_batched = noop_bias_grad;
    gemm_only.relu_forward = noop_relu;
    gemm_only.relu_backward = noop_relu_b;
    gemm_only.im2col = noop_col;
    gemm_only.col2im = noop_col;
    gemm_only.maxpool_forward = noop_pool;
    gemm_only.maxpool_backward = noop_pool_b;
    gemm_only.permute_batched = noop_permute;
    gemm_only.softmax_xent_batched = noop_xent;
    /* gpt's: the plain GEMM counted, the rest no-ops except the token split (its targets) */
    gemm_only.gemm = counted_gemm1;
    gemm_only.bias_add = noop_bias1;
    gemm_only.bias_grad = noop_bias_grad1;
    gemm_only.softmax_xent = noop_xent1;
    gemm_only.layernorm_forward = noop_ln;
    gemm_only.layernorm_backward = noop_ln_b;
    gemm_only.gelu_forward = noop_relu;
    gemm_only.gelu_backward = noop_gelu_b;
    gemm_only.attention_forward = noop_attn;
    gemm_only.attention_backward = noop_attn_b;
    gemm_only.embed_forward = noop_embed;
    gemm_only.embed_backward = noop_embed_b;
    trainer_workspace_t ws;
    trainer_workspace_init(&ws, &gemm_only, &s->model, (int)o->batch);
    /* real numbers, not the zeros of a fresh workspace: the last training batch and its
     * loss gradient (the no-op loss leaves it in place) */
    int last = s->model.n_layers - 1;
    size_t batch = (size_t)o->batch;
    gemm_only.copy(ws.x, s->learner.ws.x, sizeof(float) * batch * s->model.in_size);
    if (last >= 0) /* gpt keeps its logits' gradient inside its own activations */
        gemm_only.copy(ws.dact[last], s->learner.ws.dact[last],
                       sizeof(float) * batch * (size_t)s->model.classes);
    double t0 = dt_wall_seconds();
    for (size_t i = 0; i < steps; i++) {
        double loss;
        int correct;
        trainer_model_forward(&ws, s->learner.params, (int)o->batch);
        trainer_model_loss(&ws, (int)o->batch, &loss, &correct);
        trainer_model_backward(&ws, s->learner.params, s->learner.grads, (int)o->batch);
    }
    gemm_only.sync(); /* a GPU's launches are asynchronous */
    double dt = dt_wall_seconds() - t0;
    trainer_workspace_free(&ws);
    *gflops = counted_flops / dt * 1e-9;
    return dt;
}

int cli_bench(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        int help = argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
        cli_group_usage(help ? stdout : stderr, "bench");
        return help ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "sim"))
        return cli_bench_sim(argc - 1, argv + 1);
    if (strcmp(argv[1], "trainer"))
        return cli_usage_error("bench", "unknown benchmark \"%s\" (expected trainer or sim)",
                               argv[1]);
    train_opts_t o;
    train_opts_default(&o, 1);
    int rc = train_opts_parse(&o, "bench trainer", &cli_bench_trainer_spec, argc - 1, argv + 1);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    session_t s;
    rc = session_init(&s, &o, "bench trainer");
    if (rc == 0) {
        trainer_epoch_stats_t total = {0};
        double t0 = dt_wall_seconds();
        for (long e = 1; e <= o.epochs && !total.diverged; e++) {
            trainer_epoch_stats_t st =
                trainer_learner_epoch(&s.learner, &s.train, NULL, s.train.n, (int)o.batch);
            total.samples += st.samples;
            total.steps += st.steps;
            total.diverged = st.diverged;
        }
        double train_s = dt_wall_seconds() - t0;
        trainer_eval_t ev = trainer_evaluate(&s.learner, s.learner.params, &s.test);
        trainer_flops_t f = trainer_model_flops(&s.model);
        double step_flops = (f.forward + f.backward) * (double)o.batch +
                            trainer_optim_flops(&o.sgd, s.model.n_params) +
                            trainer_clip_flops(&o.sgd, s.model.n_params);
        double gflops = step_flops * (double)total.steps / train_s * 1e-9;
        /* The same number of full-batch steps with only the matrix products. */
        double sgemm_gflops;
        double gemm_s = gemm_only_seconds(&s, &o, total.steps, &sgemm_gflops);
        char desc[128];
        describe_model(&s, &o, desc, sizeof desc);
        char tail[128];
        if (o.model.arch == TRAINER_ARCH_GPT) /* a sample is a window of seq tokens */
            snprintf(tail, sizeof tail, "tokens_per_s=%.0f val_loss=%.4f val_next_token_acc=%.4f",
                     (double)total.samples * o.model.seq / train_s, ev.loss, ev.accuracy);
        else
            snprintf(tail, sizeof tail, "test_acc=%.4f", ev.accuracy);
        printf("bench=trainer %s device=%s batch=%ld epochs=%ld threads=%ld params=%zu "
               "flops_per_step=%.4g train_s=%.3f gflops=%.2f sgemm_only_s=%.3f "
               "sgemm_gflops=%.2f vs_sgemm=%.3f%s samples_per_s=%.0f %s\n",
               desc, s.learner.be->name, o.batch, o.epochs, o.threads, s.model.n_params, step_flops,
               train_s, gflops, gemm_s, sgemm_gflops, gemm_s / train_s,
               total.diverged ? " diverged=1" : "", (double)total.samples / train_s, tail);
        rc = total.diverged ? CLI_EXIT_RUN : CLI_EXIT_OK;
    }
    session_free(&s);
    return rc;
}

/* `dtsim calibrate`: this machine's real step time for a model and batch size on a device,
 * as the FLOP/s the step achieves (counted FLOPs / measured time), written as a device
 * profile that scenarios use with cluster.device = FILE.ini. */
int cli_calibrate(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--gemm"))
            return cli_calibrate_gemm(argc, argv);
    train_opts_t o;
    train_opts_default(&o, 1);
    int rc = train_opts_parse(&o, "calibrate", &cli_calibrate_spec, argc, argv);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    const char *out = o.out;
    long steps = o.steps;
    session_t s;
    rc = session_init(&s, &o, "calibrate");
    if (rc == 0) {
        uint32_t *order = dt_malloc(sizeof(uint32_t) * s.train.n);
        for (size_t i = 0; i < s.train.n; i++)
            order[i] = (uint32_t)i;
        trainer_rng_shuffle_u32(&s.learner.shuffle, order, s.train.n);
        size_t per = s.train.n / (size_t)o.batch;
        double t0 = 0;
        for (long i = 0; i < steps + 10; i++) {
            if (i == 10)
                t0 = dt_wall_seconds();
            trainer_learner_step(&s.learner, &s.train, order + (size_t)i % per * (size_t)o.batch,
                                 (int)o.batch);
        }
        double step_s = (dt_wall_seconds() - t0) / (double)steps;
        free(order);
        trainer_flops_t f = trainer_model_flops(&s.model);
        double flops = (f.forward + f.backward) * (double)o.batch +
                       trainer_optim_flops(&o.sgd, s.model.n_params) +
                       trainer_clip_flops(&o.sgd, s.model.n_params);
        double achieved = flops / step_s;
        char desc[128], host[256] = "this machine";
        describe_model(&s, &o, desc, sizeof desc);
        gethostname(host, sizeof host);
        time_t now = time(NULL);
        char date[32];
        strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
        FILE *f_out = stdout;
        if (out && !(f_out = fopen(out, "w"))) {
            fprintf(stderr, "dtsim calibrate: %s: cannot write: %s\n", out, strerror(errno));
            rc = CLI_EXIT_USAGE;
        } else {
            fprintf(f_out,
                    "; dtsim device profile: measured by dtsim calibrate on %s, %s\n"
                    "; %s, batch %ld, %s backend, %ld threads: %.6g s per step of %.6g FLOPs\n"
                    "; use it with cluster.device = %s\n"
                    "[device]\nname = %s-%s\nflops = %.6gGf\n",
                    host, date, desc, o.batch, s.learner.be->name, o.threads, step_s, flops,
                    out ? out : "FILE.ini", s.learner.be->name, host, achieved * 1e-9);
            if (out) {
                fclose(f_out);
                printf("calibrate %s device=%s batch=%ld step_s=%.6g flops_per_step=%.6g "
                       "achieved=%.4gGf wrote=%s\n",
                       desc, s.learner.be->name, o.batch, step_s, flops, achieved * 1e-9, out);
            }
        }
    }
    session_free(&s);
    return rc;
}
