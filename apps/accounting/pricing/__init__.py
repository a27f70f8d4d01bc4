"""The rate card as stored: `Rate` rows read into a `core.ratecard.RateCard`, a usage row or
cells priced with it, idle cost (`rates`), and a rate-card CSV parsed all or nothing
(`rate_csv`; docs/chargeback.md, "1. Import rates"). Writes go through `actions.rates`.
May import: `calendar`, `core`, the models.
"""
