/* The small mlp and synthetic data the trainer suites share (test_train, test_optim): 600
 * samples of 20 features in 4 classes, an mlp 20-16-8-4, as a Check fixture. Each suite is its
 * own program, so the statics here are each suite's own. */
#ifndef DTSIM_TESTS_MLP_FIXTURE_H
#define DTSIM_TESTS_MLP_FIXTURE_H

#include <check.h>

#include "data.h"
#include "model.h"

static trainer_dataset_t ds;
static trainer_model_t mlp;

static void setup(void)
{
    trainer_dataset_synthetic(&ds, 600, 20, 4, 1.0f, 7);
    trainer_model_config_t cfg;
    trainer_model_config_default(&cfg, TRAINER_ARCH_MLP);
    cfg.in_channels = 1;
    cfg.in_h = 1;
    cfg.in_w = 20;
    cfg.classes = 4;
    cfg.n_hidden = 2;
    cfg.hidden[0] = 16;
    cfg.hidden[1] = 8;
    ck_assert_int_eq(trainer_model_build(&mlp, &cfg, NULL), DT_OK);
}

static void teardown(void)
{
    trainer_dataset_free(&ds);
}

#endif
