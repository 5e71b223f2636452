"""Running a task: plan cells, run them through an executor, record every row."""
