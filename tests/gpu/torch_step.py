"""A few PyTorch training steps that read each batch from a file, for
gpu_test.py torch_step.

    torch_step.py DATA_FILE STEPS

Writes DATA_FILE, then per step: read a batch from it (plain file reads),
copy it to the GPU, forward, backward, optimizer step, synchronize.
"""

import sys

import torch

BATCH, FEATURES, CLASSES = 256, 512, 10


def main():
    path, steps = sys.argv[1], int(sys.argv[2])
    batch_bytes = BATCH * FEATURES * 4
    with open(path, "wb") as f:
        f.write(torch.randn(steps * BATCH * FEATURES).numpy().tobytes())

    device = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, CLASSES)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    labels = torch.randint(0, CLASSES, (BATCH,), device=device)
    torch.cuda.synchronize()

    for step in range(steps):
        with open(path, "rb", buffering=0) as f:
            f.seek(step * batch_bytes)
            raw = f.read(batch_bytes)
        x = torch.frombuffer(bytearray(raw), dtype=torch.float32).view(BATCH, FEATURES)
        x = x.to(device)
        opt.zero_grad()
        loss = loss_fn(model(x), labels)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        print("step %d loss %.4f" % (step, loss.item()))


if __name__ == "__main__":
    main()
