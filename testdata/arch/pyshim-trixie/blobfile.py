"""Stand-in for the `blobfile` package (not in Debian), which tiktoken.load reads vocabulary files through: local
paths only, opened as the built-in open() opens them; a remote URL is refused."""


def BlobFile(path, mode="r"):
    if "://" in str(path):
        raise OSError("blobfile stand-in: local files only, not " + str(path))
    return open(path, mode)
