"""Training progress: the trainer's own tqdm bar (with the loss) on a terminal, log lines otherwise.

Without a bar, transformers falls back to a ``PrinterCallback`` that prints each log dict on stdout;
library code logs instead, so that callback is swapped for :class:`LossLogger`.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def loss_logger():
    """A ``TrainerCallback`` logging ``step N/M  epoch E  loss L`` at every logging step, and the scores of each
    evaluation (the dev slice's, the validation pool's) as it ends."""
    from transformers import TrainerCallback

    class LossLogger(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            logs = logs or {}
            if "loss" in logs:
                log.info("step %d/%d  epoch %.2f  loss %.4f  lr %.2e", state.global_step, state.max_steps,
                         state.epoch or 0.0, logs["loss"], logs.get("learning_rate", 0.0))
            elif "train_loss" in logs:
                log.info("finished %d steps in %.0f s; mean loss %.4f", state.global_step,
                         logs.get("train_runtime", 0.0), logs["train_loss"])
            scores = {key[len("eval_"):]: value for key, value in logs.items() if key.startswith("eval_")
                      and isinstance(value, float) and not key.endswith(("_runtime", "_per_second"))}
            if scores:  # the dev slice's and the validation pool's scores, as each evaluation ends
                log.info("step %d/%d evaluated: %s", state.global_step, state.max_steps,
                         ", ".join(f"{name} {value:.4f}" for name, value in sorted(scores.items())))

    return LossLogger()


def configure(trainer, show_progress: bool) -> None:
    """Bars on a terminal (the trainer's), loss log lines otherwise."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    if not show_progress:
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(loss_logger())
