from memrl_bench.cli import main

main()
