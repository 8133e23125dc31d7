"""The binding of models to ledgers: a model reads private data sets, and each data set has
one ledger in the session.

The privacy core (`pymc_private.dp`) knows data sets by their ids only. This module, in the
data layer, finds the data sets a model reads (`pymc_private.data.declaration.datasets_of`) and
hands
their ids to the core: `ledger_for` gives the session's ledger of a model's data, and
`PrivacyLedger.attach` charges a ledger file with every release from it.
"""

from __future__ import annotations

from typing import Any

from pymc_private.data.declaration import datasets_of, private_data
from pymc_private.data.records import source_dataset
from pymc_private.dp import ledger
from pymc_private.errors import UnsupportedModelError

__all__ = ["PrivacyLedger", "ledger_for"]


class PrivacyLedger(ledger.PrivacyLedger):
    # The core's ledger, which can also be attached to a model: documented as the core's.
    __doc__ = ledger.PrivacyLedger.__doc__

    def attach(self, model: Any = None) -> None:
        """Charge this ledger (made by `open`) with every release from the private data
        ``model`` reads (the model on the context stack by default), in this process, from
        now on, and with what this session released from it earlier.

        Attach once per session, before privatising or sampling. Releases then go to the
        session's ledger of the data set and to this file in one locked step, refused past
        the file's budget; `pmp.ledger_for` and the reports show the file's releases from
        earlier sessions too. A file that names a source (`open`) charges the data sets of
        that source only, including those declared later in the session (a corrected
        record, a subset), and the same records declared without the source.

        A process forked from one whose session it shares (see `pymc_private.dp.session`)
        can attach only the files its parent attached: attach in the parent before forking.

        Raises
        ------
        UnsupportedModelError
            The ledger is not a file made by `open`; the model reads no private data, or no
            data of the file's source; or a forked child attaches a file of its own.
        """
        book = self._odometer("be attached to a model")
        datasets = datasets_of(model)
        if not datasets:
            raise UnsupportedModelError(
                "This model reads no pmp.PrivateData and no privatised statistics: there is "
                "no private data set to charge to the ledger."
            )
        if book.source is not None:
            if source_dataset(book.source) not in datasets:
                raise UnsupportedModelError(
                    f"The ledger {book.path} is the ledger of source {book.source!r}, and this "
                    "model reads no PrivateData declared with that source: declare it with "
                    f"pmp.PrivateData(..., source={book.source!r}) if it comes from the same "
                    "people, or attach a ledger file of its own."
                )
            source = source_dataset(book.source)
            # The source's records as declared here: the same records declared without the
            # source (a helper that forgot source=) are charged to the file too.
            records = {s.records for s in private_data(model).values() if s.dataset == source}
            datasets = (source, *sorted(records))
        self._attach_datasets(datasets)


def ledger_for(model: Any) -> PrivacyLedger:
    """The ledger of everything released from the private data a model reads.

    One ledger per private data set (:ref:`privacy-model-ledger`): a `pmp.PrivateData` array is
    a data set, identified by its values, so the same data reached through another model,
    `pm.do`, a copy, a pickle or a second `PrivateData` declaration is the same data set; a
    model returned by `pmp.privatize` carries the data sets its statistics were released from. A
    model that reads several data sets charges each of them, and its ledger is the union of
    theirs. `pmp.privatize`, `pmp.sample`, `pmp.sample_posterior` and the private steps record
    here, and budgets are checked against it.

    Raises
    ------
    UnsupportedModelError
        When the model reads no private data and no released statistics.
    """
    datasets = datasets_of(model)
    if not datasets:
        raise UnsupportedModelError(
            "This model reads no pmp.PrivateData and no privatised statistics: there is no "
            "private data set whose ledger to use."
        )
    return PrivacyLedger._session_view(datasets)
