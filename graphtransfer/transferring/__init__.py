"""Transfer: a trained policy moved to other (larger) graphs -- a new model with the same weights,
evaluated there zero-shot against the baselines, optionally fine-tuned or adapted there, saved."""
