"""Near-miss of all-samples-stale-signature: the hook takes the data source too."""


def process_all_samples(args, all_samples, data_source):
    dropped = sum(1 for group in all_samples for s in group if s.remove_sample)
    print(f"dropped {dropped} samples")
