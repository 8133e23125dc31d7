"""The privacy core: releases and their events, composition, ledgers, budgets, journals, the
session's state and the noise mechanisms.

Built on numpy, scipy, OpenDP and dp-accounting only: nothing here imports PyMC, PyTensor or a
module of `pymc_private` outside this package except `pymc_private.errors`
(``tests/test_layers.py`` checks it). The data layer stands above it: which data sets a model
reads, and so which ledger charges it, is `pymc_private.data.ledgers`.
"""
