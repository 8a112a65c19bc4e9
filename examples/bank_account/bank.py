"""A minimal bank account model."""


class BankAccount:
    """A bank account that charges a flat fee on every withdrawal."""

    WITHDRAWAL_FEE = 1

    def __init__(self, owner, balance=0):
        if balance < 0:
            raise ValueError("opening balance cannot be negative")
        self.owner = owner
        self.balance = balance
        self.history = []

    def deposit(self, amount):
        """Add amount to the balance and return the new balance."""
        if amount <= 0:
            raise ValueError("deposit must be positive")
        self.balance += amount
        self.history.append(("deposit", amount))
        return self.balance

    def can_withdraw(self, amount):
        """Return True if amount plus the fee is covered by the balance."""
        return amount + self.WITHDRAWAL_FEE <= self.balance

    def withdraw(self, amount):
        """Take amount plus WITHDRAWAL_FEE out of the account; return the new balance."""
        if amount <= 0:
            raise ValueError("withdrawal must be positive")
        if not self.can_withdraw(amount):
            raise ValueError("insufficient funds")
        self.balance += amount + self.WITHDRAWAL_FEE
        self.history.append(("withdraw", amount))
        return self.balance

    def __repr__(self):
        return f"BankAccount({self.owner!r}, balance={self.balance})"
