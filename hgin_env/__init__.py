"""hgin: Hollywood Gin Rummy for reinforcement learning."""
