"""Baseline adapters, registered by name (cheap: nothing heavy is imported here).

Importing a module registers its models: each adapter class carries ``@register_model`` (its spec
beside its code), and each foundation-model module registers its cards. The order below is the
registry's order.
"""

# naive and statistical forecasters, Fracast, causal imputation baselines (imputation task only),
# and an honest non-neural embedding for classification
import baselines.naive  # noqa: F401
import baselines.statsforecast_models  # noqa: F401
import baselines.fracast_model  # noqa: F401
import baselines.imputation  # noqa: F401
import baselines.features  # noqa: F401

# supervised references trained on each fold's training subjects (off by default; gluonts: extra supervised)
import baselines.supervised  # noqa: F401
import baselines.gluonts_models  # noqa: F401

# foundation-model baselines of the paper (cheap: cards only; each library is imported on load)
import baselines.chronos_model  # noqa: F401
import baselines.timesfm_model  # noqa: F401
import baselines.tirex_model  # noqa: F401
import baselines.paper_models  # noqa: F401

import baselines.adapted_entries  # noqa: F401 (fracast@head, fracast@full: run --adapt; last, after the models above)
