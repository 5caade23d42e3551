"""A buffer filter with the old (buffer, num_samples) signature."""


def buffer_filter(buffer, num_samples):
    taken = buffer[:num_samples]
    del buffer[:num_samples]
    return taken
