"""The family interface and what every family shares: plans, verdicts, the run-time contract."""
