"""Settings: declared once with their types, ranges and help (:mod:`.schema`), read in layers (:mod:`.layers`)."""

from graphtransfer.config.schema import (
    CONVS,
    DEFAULT_COMMIT_FRACTION,
    MAX_DRAW_NODES,
    SECTIONS,
    SEED_LIMIT,
    LogConfig,
    ModelConfig,
    PPOConfig,
    RunConfig,
    check_layer,
    cli_keys,
    help_of,
    ppo_for_task,
    schedule,
    schedule_start,
    task_defaults,
)

__all__ = [
    "CONVS",
    "DEFAULT_COMMIT_FRACTION",
    "MAX_DRAW_NODES",
    "SECTIONS",
    "SEED_LIMIT",
    "LogConfig",
    "ModelConfig",
    "PPOConfig",
    "RunConfig",
    "check_layer",
    "cli_keys",
    "help_of",
    "ppo_for_task",
    "schedule",
    "schedule_start",
    "task_defaults",
]
