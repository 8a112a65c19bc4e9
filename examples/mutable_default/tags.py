"""Tiny helpers for managing lists of tags."""


def add_tag(tag, tags=[]):
    """Add a normalised tag to tags and return the list.

    The tag is stripped and lowercased; duplicates are ignored. When a list is
    passed it is updated in place. When no list is given, a new list is
    created for this call.
    """
    tag = tag.strip().lower()
    if tag not in tags:
        tags.append(tag)
    return tags


def remove_tag(tag, tags):
    """Remove a tag (compared case-insensitively) from tags, if present."""
    tag = tag.strip().lower()
    if tag in tags:
        tags.remove(tag)
    return tags


def format_tags(tags):
    """Return the tags sorted and joined by ', '."""
    return ", ".join(sorted(tags))
