"""Age rules for account sign-up."""

ADULT_AGE = 18


def is_adult(age):
    """Return True if a person of this age is an adult (ADULT_AGE or older).

    Raises ValueError for negative ages.
    """
    if age < 0:
        raise ValueError("age cannot be negative")
    return age > ADULT_AGE


def years_until_adult(age):
    """Return how many whole years until age reaches ADULT_AGE (0 if already there)."""
    return max(0, ADULT_AGE - age)


def signup_message(name, age):
    """Return the greeting shown after sign-up."""
    if is_adult(age):
        return f"Welcome, {name}!"
    return f"Sorry {name}, come back in {years_until_adult(age)} year(s)."
