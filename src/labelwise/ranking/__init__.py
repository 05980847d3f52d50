"""Ranking many models with few labels (comparative testing with an adaptive campaign)."""

from __future__ import annotations

from .campaign import RankingCampaign, cppi_select
from .synthetic import SyntheticZoo, synthetic_zoo

__all__ = ["RankingCampaign", "SyntheticZoo", "cppi_select", "synthetic_zoo"]
