"""chatql benchmarks."""
