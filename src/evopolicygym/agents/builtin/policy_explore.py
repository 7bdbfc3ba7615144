"""Count-based exploration policy, written by EvoPolicyGym's builtin:explore agent.

For Discrete action spaces. Within an episode the policy counts how often it has seen each
observation (``N(s)``), taken each action in it (``N(s, a)``) and where that action led last
time (``T(s, a)``), and plays the action with the smallest score

    N(s, a) + beta * N(T(s, a)) - preference[a] + jitter

so it tries what it has not tried here yet and prefers actions that lead to rarely seen
observations: systematic exploration of a sparse-reward task instead of a random walk. The
rule's parameters (``preference`` per action, ``beta``, ``jitter``) live in ``params.json``,
which may hold a ``population`` of them: episode ``i`` of a batch plays member
``i mod len(population)``. Observations are keyed by their JSON text with floats rounded to two
decimals. Standard library only.
"""

import json
import random
from pathlib import Path

PARAMS_FILE = Path(__file__).with_name("params.json")


def _rounded(value):
    if isinstance(value, float):
        return round(value, 2)
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def observation_key(obs):
    return json.dumps(_rounded(obs), sort_keys=True, separators=(",", ":"))


def load_population(path):
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return data.get("population", [data])


class Policy:
    def __init__(self, obs_space, action_space, env_meta):
        if action_space.get("type") != "Discrete":
            raise ValueError("the exploration policy needs a Discrete action space")
        self.n = int(action_space["n"])
        self.start = int(action_space.get("start", 0))
        self.population = load_population(PARAMS_FILE)
        for member in self.population:
            if len(member["preference"]) != self.n:
                raise ValueError(f"params.json needs {self.n} preferences per member")
        self.reset(0)

    def reset(self, episode_index):
        member = self.population[int(episode_index) % len(self.population)]
        self.preference = [float(p) for p in member["preference"]]
        self.beta = float(member.get("beta", 1.0))
        self.jitter = float(member.get("jitter", 0.1))
        self.rng = random.Random(int(episode_index))
        self.state_visits = {}
        self.action_counts = {}
        self.next_state = {}
        self.last = None

    def act(self, obs):
        key = observation_key(obs)
        self.state_visits[key] = self.state_visits.get(key, 0) + 1
        if self.last is not None:
            self.next_state[self.last] = key
        best, best_score = 0, None
        for action in range(self.n):
            pair = (key, action)
            after = self.next_state.get(pair)
            score = (
                self.action_counts.get(pair, 0)
                + (self.beta * self.state_visits.get(after, 0) if after is not None else 0.0)
                - self.preference[action]
                + self.jitter * self.rng.random()
            )
            if best_score is None or score < best_score:
                best, best_score = action, score
        pair = (key, best)
        self.action_counts[pair] = self.action_counts.get(pair, 0) + 1
        self.last = pair
        return self.start + best
