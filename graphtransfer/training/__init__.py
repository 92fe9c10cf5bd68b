"""Training with Stable-Baselines3: the loop (train, resume, fine-tune), the model, PPO's update
by node budget, A2C (masked for node choice), DQN for node choice with its replay buffer, compact
rollout buffers, callbacks and logs."""
