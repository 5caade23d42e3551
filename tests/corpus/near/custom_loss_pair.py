"""Near-miss of custom-loss-bare-tensor: the loss comes back with its log dict."""


def custom_loss(args, batch, logits, sum_of_sample_mean):
    log_probs = logits.log_softmax(dim=-1).max(dim=-1).values
    loss = -sum_of_sample_mean(log_probs * batch["advantages"])
    return loss, {"custom/loss": loss.detach().item()}
