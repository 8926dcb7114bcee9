"""kprof tune's command line: what --help names without importing the tuner."""




def test_the_cli_copies_of_tuning_constants_match():
    from kprof.cli import tune_cmd
    from kprof.tuning.search import STRATEGIES

    assert set(tune_cmd.STRATEGIES) == set(STRATEGIES)
