"""Built-in offline agents: ``builtin:random``, ``builtin:hillclimb``, ``builtin:cmaes`` and
``builtin:explore``.

They are ordinary command agents (run as ``python -m evopolicygym.agents.builtin <name>``)
that speak only the public protocol: the ``EVOPOLICYGYM_*_URL`` variables, ``GET /info``,
files under ``system/`` and ``POST /submit``. They need no network beyond the loopback judge
and no model. The policy files they write (``policy_random.py``, ``policy_linear.py`` here)
use only the standard library and numpy.
"""

from ._agents import HillClimbAgent, RandomAgent
from ._budget import BudgetView
from ._client import JudgeClient, SubmitAnswer
from ._cmaes import CmaesAgent
from ._explore import ExploreAgent
from ._hillclimb import HillClimb, HillClimbState
from ._serve import CannotPlay, serve

BUILTIN_AGENTS = {
    "random": RandomAgent,
    "hillclimb": HillClimbAgent,
    "cmaes": CmaesAgent,
    "explore": ExploreAgent,
}

__all__ = [
    "BUILTIN_AGENTS",
    "BudgetView",
    "CannotPlay",
    "CmaesAgent",
    "ExploreAgent",
    "HillClimb",
    "HillClimbAgent",
    "HillClimbState",
    "JudgeClient",
    "RandomAgent",
    "SubmitAnswer",
    "serve",
]
