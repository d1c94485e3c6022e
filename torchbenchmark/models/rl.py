"""Soft Actor-Critic (Haarnoja et al., 2018) updated from synthetic replay batches, no simulator."""

from __future__ import annotations

import copy
import math

import torch
from torch import nn
from torch.nn import functional as F

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta

# The policy's log standard deviation is clamped as in the reference implementations, so that early
# random weights cannot produce a degenerate or exploding Gaussian.
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


def mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (cin, cout) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(cin, cout))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class GaussianPolicy(nn.Module):
    """A tanh-squashed Gaussian policy: actions in [-1, 1]^d with their log-probabilities."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: int) -> None:
        super().__init__()
        self.net = mlp([obs_dim, hidden, hidden, 2 * action_dim])

    def forward(self, obs: torch.Tensor, deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        if deterministic:
            return torch.tanh(mean), None
        std = log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).exp()
        # Reparameterised, so the actor loss differentiates through the sampled action.
        pre_tanh = mean + std * torch.randn_like(mean)
        action = torch.tanh(pre_tanh)
        z = (pre_tanh - mean) / std
        gaussian_log_prob = (-0.5 * z**2 - std.log() - 0.5 * math.log(2 * math.pi)).sum(-1)
        # Change of variables through tanh, in the numerically stable form: log(1 - tanh(u)^2).
        squash_correction = (2 * (math.log(2) - pre_tanh - F.softplus(-2 * pre_tanh))).sum(-1)
        return action, gaussian_log_prob - squash_correction


class TwinQ(nn.Module):
    """Two independent Q networks; the minimum of the two curbs value over-estimation."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: int) -> None:
        super().__init__()
        self.q1 = mlp([obs_dim + action_dim, hidden, hidden, 1])
        self.q2 = mlp([obs_dim + action_dim, hidden, hidden, 1])

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.cat([obs, action], dim=-1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)


class Temperature(nn.Module):
    """The entropy temperature alpha, learned in log space so it stays positive."""

    def __init__(self) -> None:
        super().__init__()
        self.log_alpha = nn.Parameter(torch.zeros(()))


class SoftActorCritic(BenchmarkModel):
    meta = ModelMeta(
        name="soft_actor_critic",
        family="rl",
        # 256 is the paper's replay batch. A step is then a few ms on CPU, below the usual 0.05 s floor,
        # on purpose: SAC's step is a chain of small MLP ops, and a larger batch would hide that.
        batch_sizes=BatchSizes(cpu_train=256, cpu_eval=256, cuda_train=256, cuda_eval=256),
        smoke={"batch_size": 8, "hidden": 16},
        annotated=False,
        note=(
            "Unannotated: one SAC update is three losses with three optimizers (critic, actor, temperature) "
            "plus a Polyak target update, not one forward/backward/optimizer. CPU batch 256 (the paper's): a "
            "default train step is 13 ms single-thread CPU (about 30 ms wall on the loaded 2-core machine), "
            "eval 1 ms; peak RSS 0.7 GiB."
        ),
    )

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        obs_dim: int = 17,  # HalfCheetah's observation and action sizes
        action_dim: int = 6,
        hidden: int = 256,
        gamma: float = 0.99,
        tau: float = 0.005,
    ) -> None:
        self.obs_dim, self.action_dim, self.hidden = obs_dim, action_dim, hidden
        self.gamma, self.tau = gamma, tau
        self.target_entropy = -float(action_dim)
        super().__init__(device=device, batch_size=batch_size)

    def build(self) -> nn.Module:
        critic = TwinQ(self.obs_dim, self.action_dim, self.hidden)
        # Target critics live in the module so they move with it and the eval purity check sees them,
        # but no optimizer owns them: only the Polyak update in train changes them.
        target = copy.deepcopy(critic).requires_grad_(False)
        return nn.ModuleDict(
            {
                "actor": GaussianPolicy(self.obs_dim, self.action_dim, self.hidden),
                "critic": critic,
                "target_critic": target,
                "temperature": Temperature(),
            }
        )

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        return [
            torch.optim.Adam(self.module["critic"].parameters(), lr=3e-4),
            torch.optim.Adam(self.module["actor"].parameters(), lr=3e-4),
            torch.optim.Adam(self.module["temperature"].parameters(), lr=3e-4),
        ]

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
        obs = torch.randn(batch_size, self.obs_dim, generator=generator)
        if mode == "eval":
            return {"obs": obs}
        return {
            "obs": obs,
            "action": torch.rand(batch_size, self.action_dim, generator=generator) * 2 - 1,
            "reward": torch.randn(batch_size, generator=generator),
            "next_obs": torch.randn(batch_size, self.obs_dim, generator=generator),
            "done": (torch.rand(batch_size, generator=generator) < 0.05).float(),
        }

    def train_step(self, batch: dict[str, torch.Tensor]) -> None:
        actor, critic, target = self.module["actor"], self.module["critic"], self.module["target_critic"]
        log_alpha = self.module["temperature"].log_alpha
        critic_opt, actor_opt, alpha_opt = self.optimizers
        alpha = log_alpha.detach().exp()

        # Critic: regress both Qs on the soft Bellman target from the target critics.
        with torch.no_grad():
            next_action, next_log_prob = actor(batch["next_obs"])
            target_q = torch.min(*target(batch["next_obs"], next_action)) - alpha * next_log_prob
            backup = batch["reward"] + self.gamma * (1 - batch["done"]) * target_q
        q1, q2 = critic(batch["obs"], batch["action"])
        critic_loss = F.mse_loss(q1, backup) + F.mse_loss(q2, backup)
        critic_opt.zero_grad(set_to_none=True)
        critic_loss.backward()
        critic_opt.step()

        # Actor: maximise the soft value of its own reparameterised actions. The critics are frozen
        # meanwhile so the actor's backward does not spend time on (or leave) critic gradients.
        critic.requires_grad_(False)
        action, log_prob = actor(batch["obs"])
        actor_loss = (alpha * log_prob - torch.min(*critic(batch["obs"], action))).mean()
        actor_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        actor_opt.step()
        critic.requires_grad_(True)

        # Temperature: move the policy's entropy towards the target entropy.
        alpha_loss = -(log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        alpha_opt.zero_grad(set_to_none=True)
        alpha_loss.backward()
        alpha_opt.step()

        with torch.no_grad():
            for target_param, param in zip(target.parameters(), critic.parameters()):
                target_param.lerp_(param, self.tau)
        self.last_loss = (critic_loss + actor_loss + alpha_loss).detach()

    def infer(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        action, _ = self.module["actor"](inputs["obs"], deterministic=True)
        return action
