"""What a league is made of, shared by the benchmark's league and the trainer's league of snapshots.

* :mod:`~agentrl.league.elo`: Elo ratings, with fixed anchors.
* :mod:`~agentrl.league.pfsp`: prioritized fictitious self-play, the opponents' sampling weights and the draw.
* :mod:`~agentrl.league.tally`: a player's wins, draws and losses against another, and its win rate shrunk
  toward a prior (what PFSP reads).

The benchmark's :class:`~agentrl.bench.league.League` (round robins, a results table) and the trainer's
:class:`~agentrl.train.league.TrainingLeague` (snapshots of the learner) are built from these. The layer sits
above the rollout engine and below the trainer and the bench.
"""
