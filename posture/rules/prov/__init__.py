"""PROV-*: the provider hosting a cluster, judged by its questionnaire (DESIGN §5).

questionnaire (PROV-001 no accepted questionnaire, PROV-002 red-flag answers).
"""

from __future__ import annotations

from posture.rules.prov import questionnaire

__all__ = ["questionnaire"]
