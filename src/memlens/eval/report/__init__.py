"""report stage: accuracy with bootstrap intervals, the paper's analyses, leaderboard, figures, MLflow."""
