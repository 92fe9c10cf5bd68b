"""Which sampler and pruner a search uses (``tune --sampler``, ``--pruner``), and the seeding that
lets several processes share one study: each trial draws from a sampler seeded by the search's
seed and the trial's number. Needs Optuna (``graphtransfer[tune]``); imported only once it is there.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable

import numpy as np
import optuna
from optuna.samplers import BaseSampler

from graphtransfer.config import PRUNERS, SAMPLERS
from graphtransfer.errors import UsageError

TPE_STARTUP_TRIALS = 5


class SeededByTrial(BaseSampler):
    """A sampler that, before each trial, makes a fresh one seeded by ``seed`` and the trial's
    number. Trial numbers are unique in a study, so processes sharing it never repeat each
    other's draws; a resumed study goes on drawing new settings; and the same study history with
    the same seed gives the same draws. TPE, random and CMA-ES keep no state between trials but
    their random generator: what they learn, they read back from the study."""

    def __init__(self, make: Callable[[int], BaseSampler], seed: int):
        self._make, self._seed = make, seed
        self._sampler = make(seed)

    def before_trial(self, study, trial) -> None:
        self._sampler = self._make(trial_seed(self._seed, trial.number))
        self._sampler.before_trial(study, trial)

    def infer_relative_search_space(self, study, trial):
        return self._sampler.infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        return self._sampler.sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._sampler.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study, trial, state, values) -> None:
        self._sampler.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self._sampler.reseed_rng()


def trial_seed(seed: int, number: int) -> int:
    """A 32-bit seed from the search's seed and a trial number; distinct pairs give unrelated seeds."""
    return int(np.random.SeedSequence([seed, number]).generate_state(1)[0])


def make_sampler(name: str, seed: int) -> BaseSampler:
    """The sampler ``name`` (one of :data:`graphtransfer.config.SAMPLERS`), seeded per trial (:class:`SeededByTrial`)."""
    check_sampler(name)
    return SeededByTrial(_SAMPLER_MAKERS[name], seed)


def _tpe(seed: int) -> BaseSampler:
    # constant_liar: trials still running in other processes count as bad guesses, so workers started
    # together spread out instead of all drawing near the same best trial
    with warnings.catch_warnings():  # constant_liar is "experimental" in some Optuna releases
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=TPE_STARTUP_TRIALS, constant_liar=True)


def _cmaes(seed: int) -> BaseSampler:
    # most settings are choices, which CMA-ES leaves to random draws; that is expected, so no warning per trial
    return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)


_SAMPLER_MAKERS: dict[str, Callable[[int], BaseSampler]] = {
    "tpe": _tpe,
    "random": lambda seed: optuna.samplers.RandomSampler(seed=seed),
    "cmaes": _cmaes,
}


def check_sampler(name: str) -> None:
    """Refuse, before anything runs, a sampler that is not one of :data:`graphtransfer.config.SAMPLERS` or cannot run here."""
    if name not in SAMPLERS:
        raise UsageError(f"--sampler {name!r} is not a sampler here; choose one of {', '.join(SAMPLERS)}, e.g. --sampler random")
    if name == "cmaes" and importlib.util.find_spec("cmaes") is None:
        raise UsageError(
            "--sampler cmaes needs the cmaes package, which is not installed; pip install 'graphtransfer[tune]' (or --sampler tpe)"
        )


def make_pruner(name: str, every: int):
    """The pruner ``name`` (one of :data:`graphtransfer.config.PRUNERS`) for trials evaluated every ``every`` env steps."""
    check_pruner(name)
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=every)
    if name == "halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=every, reduction_factor=3)
    return optuna.pruners.NopPruner()


def check_pruner(name: str) -> None:
    if name not in PRUNERS:
        raise UsageError(f"--pruner {name!r} is not a pruner here; choose one of {', '.join(PRUNERS)}, e.g. --pruner none")
