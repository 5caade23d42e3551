"""A --rollout-all-samples-process-path hook without the data_source parameter."""


def process_all_samples(args, all_samples):
    dropped = sum(1 for group in all_samples for s in group if s.remove_sample)
    print(f"dropped {dropped} samples")
