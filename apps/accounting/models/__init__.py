"""Accounting's models, one module a kind: rollups (hourly, daily), rates and node pools, billing periods and their lines, stored answers."""
from .answers import InputChange, MonthAnswer, MonthBody, MonthCell, MonthLine
from .daily import UsageDay, UsageDayBuilt, UsagePodDay, UsagePodDayBuilt
from .periods import BillingPeriod, FrozenDay, LineKind, StatementLine
from .rates import ON_DEMAND, PRICE_CLASSES, NodePool, PriceClass, Rate, RateImport
from .rollups import DeviceHealthHour, PodOwner, QueuedDemandHour, QuotaHour, UsageHour

__all__ = ["UsageHour", "UsageDay", "UsageDayBuilt", "UsagePodDay", "UsagePodDayBuilt", "DeviceHealthHour", "QueuedDemandHour", "QuotaHour", "PodOwner", "Rate", "RateImport", "NodePool", "PriceClass",
           "ON_DEMAND", "PRICE_CLASSES", "BillingPeriod", "StatementLine", "FrozenDay", "LineKind",
           "InputChange", "MonthAnswer", "MonthBody", "MonthCell", "MonthLine"]
