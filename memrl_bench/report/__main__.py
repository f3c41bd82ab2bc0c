from memrl_bench.report.cli import main

main()
