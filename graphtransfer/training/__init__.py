"""Training with Stable-Baselines3: the loop (train, resume, fine-tune), the model, PPO's update
by node budget, compact rollout buffers, callbacks and logs."""
