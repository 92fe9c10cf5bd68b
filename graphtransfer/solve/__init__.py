"""Running a saved policy: the one loader, the memory guard, inference, predict, eval, many workers."""
